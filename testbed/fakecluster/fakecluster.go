// Package fakecluster fills a real API server with a production-sized cluster:
// namespaces, workloads of the usual kinds (Deployments with their ReplicaSets,
// StatefulSets, DaemonSets, CronJobs with their Jobs) and their running pods,
// each object the size of one in a production cluster. No controller or
// kubelet runs; the objects are written as they would have written them.
// cachemem measures the shared cache on such a cluster, and scaletest drives
// nodes mode on one whose pods its fake Cilium nodes name.
package fakecluster

import (
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Logf writes a progress line with the time to standard error.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// CreatingClient returns a clientset for filling the cluster. client-go's
// default rate limit (5 requests a second, bursts of 10) would stretch a
// cluster of tens of thousands of objects to hours, and protobuf spares the
// API server the JSON.
func CreatingClient(cfg *rest.Config, userAgent string) (*kubernetes.Clientset, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = userAgent
	return kubernetes.NewForConfig(cfg)
}

// Workload is one workload of the plan as the flows name it.
type Workload struct {
	Namespace, Name, Kind string
	Pods                  []Pod
}

// Pod is one of a workload's pods: its name, address and node (the index of
// NodeName).
type Pod struct {
	Name, IP string
	Node     int
}

// WorkloadCount is the number of workloads of the plan.
func (p *Plan) WorkloadCount() int { return len(p.workloads) }

// Workloads returns the plan's workloads with their pods, as Create makes
// them (pod j of the cluster on node j mod Nodes).
func (p *Plan) Workloads() []Workload {
	out := make([]Workload, 0, len(p.workloads))
	global := 0
	for _, w := range p.workloads {
		wl := Workload{Namespace: w.namespace, Name: w.name, Kind: w.kind}
		for o := range w.pods {
			name, _ := w.podName(o, global)
			wl.Pods = append(wl.Pods, Pod{Name: name, IP: PodIP(global), Node: global % p.Nodes})
			global++
		}
		out = append(out, wl)
	}
	return out
}
