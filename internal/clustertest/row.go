package clustertest

import "fmt"

// row is one workload of the table with its pods. A bare pod is a row of its own
// with an empty kind.
type row struct {
	namespace string
	// kind is one of the Kind constants, or empty for a bare pod.
	kind string
	// name is the workload's name, or the pod's name for a bare pod.
	name string
	// child is what names the object between the workload and its pods: a
	// Deployment's pod-template-hash, or a CronJob's scheduled time in minutes.
	child string
	// labels are the fixture's pod labels; the workload's selector is these too.
	labels map[string]string
	// serviceAccount is the name in the fixture's SPIFFE identity; empty for
	// "default".
	serviceAccount string
	hostNetwork    bool
	pods           []pod
}

// pod is a pod of a row, named and addressed as the fixtures show it.
type pod struct {
	name, ip string
}

// node is the node that the pod runs on: worker-N for an address in
// 10.0.N.0/24 with N from 1 to 3 (the Hubble fixture's pods), worker-1 for any
// other. Tests of what concerns one node (the data plane's gaps) place
// workloads by it.
func (p pod) node() string {
	var n int
	if _, err := fmt.Sscanf(p.ip, "10.0.%d.", &n); err == nil && n >= 1 && n <= 3 {
		return fmt.Sprintf("worker-%d", n)
	}
	return "worker-1"
}

// childName is the name of the ReplicaSet or Job between the workload and its
// pods, or empty when the workload owns its pods itself.
func (r row) childName() string {
	if r.child == "" {
		return ""
	}
	return r.name + "-" + r.child
}

// generateName is the prefix that the owning controller gives its pods' names.
func (r row) generateName() string {
	switch {
	case r.kind == "":
		return ""
	case r.child != "":
		return r.childName() + "-"
	default:
		return r.name + "-"
	}
}

func (r row) workloadName() string {
	if r.kind == "" {
		return ""
	}
	return r.name
}

func (r row) serviceAccountName() string {
	if r.serviceAccount == "" {
		return "default"
	}
	return r.serviceAccount
}

// app is the label set that most fixture pods carry.
func app(name string) map[string]string {
	return map[string]string{"app": name}
}
