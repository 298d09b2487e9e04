// Package clustertest creates, in a Kubernetes API server, the namespaces,
// workloads and pods that the recorded flow fixtures under testdata/ name, so that
// tests and the demo resolve each flow end (a pod by IP or by name, or Goldmane's
// aggregated "<generateName>*") to its workload as they would in a cluster.
//
// No controller runs in a test API server, so Create writes by hand what the
// controllers would: the ReplicaSets and Jobs between the workloads and their pods,
// the controller owner references, and the pods' status with their IPs.
package clustertest

import "maps"

// Kinds of the workloads of the table, spelled as owner references spell them.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindCronJob     = "CronJob"
	KindJob         = "Job"
)

// Workload is a workload that learning resolves pods to: the top of a pod's chain
// of controller owner references, never a ReplicaSet or a Job that a CronJob owns.
type Workload struct {
	Namespace, Kind, Name string
}

// Pod is a pod of the fixtures as Create makes it, with the workload that its
// owner references lead to, so that tests can state what resolution should find.
type Pod struct {
	Namespace, Name string
	// GenerateName is the prefix that Goldmane shows followed by "*"; empty for a
	// bare pod, which Goldmane shows by its name.
	GenerateName string
	// IP is the pod IP, the node IP for a host-network pod.
	IP string
	// WorkloadKind and WorkloadName are empty for a bare pod: no workload owns it.
	WorkloadKind, WorkloadName string
	// ServiceAccount is the name in the pod's SPIFFE identity, which Istio
	// authorization policies match.
	ServiceAccount string
	// Labels are the labels that the table gives the pod template. The API server's
	// pods carry more: pod-template-hash, or the labels the API server generates
	// for a Job's selector.
	Labels map[string]string
	// HostNetwork pods share the node's IP, so a flow end with that IP is not
	// theirs alone.
	HostNetwork bool
	// Node is the node the pod is bound to (its spec.nodeName).
	Node string
}

// Pods returns every pod that Create makes, in table order.
func Pods() []Pod {
	var out []Pod
	for _, w := range table {
		for _, p := range w.pods {
			out = append(out, Pod{
				Namespace:      w.namespace,
				Name:           p.name,
				GenerateName:   w.generateName(),
				IP:             p.ip,
				WorkloadKind:   w.kind,
				WorkloadName:   w.workloadName(),
				ServiceAccount: w.serviceAccountName(),
				Labels:         maps.Clone(w.labels),
				HostNetwork:    w.hostNetwork,
				Node:           p.node(),
			})
		}
	}
	return out
}

// Workloads returns every workload that Create makes, in table order.
func Workloads() []Workload {
	var out []Workload
	for _, w := range table {
		if w.kind != "" {
			out = append(out, Workload{Namespace: w.namespace, Kind: w.kind, Name: w.name})
		}
	}
	return out
}
