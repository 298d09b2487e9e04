package enforcerextension

import (
	"context"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// resolver resolves flow ends to workloads from the compact stores, and finds
// policies in the controller-runtime cache.
type resolver struct {
	stores *stores
	reader client.Reader
}

// ResolveIP resolves the pod that held ip at time at, among the pods that
// the cache holds and those deleted within their grace period. A pod that
// started after at, or ended before it, never had the flow; when more than
// one may have held ip at at, the flow is not attributed
// (UnresolvedAmbiguousAddress), nor when at is older than what the cache
// remembers of deleted pods (UnresolvedTooOld). Pods on the host network
// share their node's address, so an address that one of them has says
// nothing about which workload sent or received.
func (r *resolver) ResolveIP(ip string, at time.Time) (workload.Ref, workload.Unresolved) {
	p, reason := r.holder(ip, at)
	if reason != "" {
		return workload.Ref{}, reason
	}
	return r.resolvePod(p)
}

// holder is the one pod that held ip at time at (now for zero), under the
// rules of ResolveIP, or the reason why there is none.
func (r *resolver) holder(ip string, at time.Time) (*podInfo, workload.Unresolved) {
	if at.IsZero() {
		at = time.Now()
	}
	var holder *podInfo
	held := 0
	for _, p := range r.stores.ended.withIP(r.stores.podsBy(indexPodIP, ip), ip) {
		if !p.heldAt(at) {
			continue
		}
		if p.hostNetwork {
			return nil, workload.UnresolvedHostNetwork
		}
		if holder == nil || holder.UID != p.UID {
			held++
		}
		holder = p
	}
	switch {
	case at.Before(r.stores.ended.remembersFrom()):
		return nil, workload.UnresolvedTooOld
	case held == 0:
		return nil, workload.UnresolvedNoPod
	case held > 1:
		return nil, workload.UnresolvedAmbiguousAddress
	}
	return holder, ""
}

// ResolvePod resolves a pod by name, a deleted one within its grace period
// included, or Goldmane's "<generateName>*" through any pod of that
// generateName: they all belong to one ReplicaSet, Job or DaemonSet.
func (r *resolver) ResolvePod(namespace, name string) (workload.Ref, workload.Unresolved) {
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		if pods := r.stores.podsBy(indexGenerateName, namespace+"/"+prefix); len(pods) > 0 {
			return r.resolvePod(pods[0])
		}
		if p := r.stores.ended.generated(namespace, prefix); p != nil {
			return r.resolvePod(p)
		}
		return workload.Ref{}, workload.UnresolvedNoPod
	}
	p := r.stores.podOrEnded(namespace, name)
	if p == nil {
		return workload.Ref{}, workload.UnresolvedNoPod
	}
	return r.resolvePod(p)
}

// ResolveWorkload returns w when the cache holds it, a Job of a CronJob as
// its CronJob, as resolvePod follows a pod's controller.
func (r *resolver) ResolveWorkload(w workload.Ref) (workload.Ref, bool) {
	info := r.stores.workload(string(w.Kind), w.Namespace, w.Name)
	if info == nil {
		return workload.Ref{}, false
	}
	if w.Kind == v1alpha1.WorkloadKindJob && info.ownerKind == "CronJob" {
		w.Kind, w.Name = v1alpha1.WorkloadKindCronJob, info.ownerName
	}
	return w, true
}

// resolvePod follows the pod's controller to its workload: a ReplicaSet to its
// Deployment, a Job to its CronJob when it has one.
func (r *resolver) resolvePod(p *podInfo) (workload.Ref, workload.Unresolved) {
	if p.hostNetwork {
		return workload.Ref{}, workload.UnresolvedHostNetwork
	}
	if p.ownerKind == "" {
		return workload.Ref{}, workload.UnresolvedBarePod
	}
	w := workload.Ref{Namespace: p.Namespace, Name: p.ownerName}
	switch p.ownerKind {
	case "ReplicaSet":
		rs := r.stores.workload("ReplicaSet", p.Namespace, p.ownerName)
		if rs == nil || rs.ownerKind != "Deployment" {
			return workload.Ref{}, workload.UnresolvedUnsupportedOwner
		}
		w.Kind, w.Name = v1alpha1.WorkloadKindDeployment, rs.ownerName
	case "StatefulSet":
		w.Kind = v1alpha1.WorkloadKindStatefulSet
	case "DaemonSet":
		w.Kind = v1alpha1.WorkloadKindDaemonSet
	case "Job":
		w.Kind = v1alpha1.WorkloadKindJob
		if job := r.stores.workload("Job", p.Namespace, p.ownerName); job != nil && job.ownerKind == "CronJob" {
			w.Kind, w.Name = v1alpha1.WorkloadKindCronJob, job.ownerName
		}
	default:
		return workload.Ref{}, workload.UnresolvedUnsupportedOwner
	}
	return w, ""
}

// WorkloadsOn returns the workloads that have a running pod on node (on any
// node for ""), each once: those whose learning a gap of that node's flows
// concerns. Pods without a workload (bare, host network) are left out.
func (r *resolver) WorkloadsOn(node string) []workload.Ref {
	var out []workload.Ref
	seen := map[workload.Ref]bool{}
	for _, p := range r.stores.runningPods(node) {
		w, reason := r.resolvePod(p)
		if reason != "" || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// HasPolicy reports whether a WorkloadNetworkPolicy targets w in direction d.
func (r *resolver) HasPolicy(w workload.Ref, d v1alpha1.Direction) bool {
	return len(r.Policies(w, d)) > 0
}

// Policies lists the policies that target w in direction d. The flow path asks
// for every flow, so it reads the cached objects without copying them.
func (r *resolver) Policies(w workload.Ref, d v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy {
	var list v1alpha1.WorkloadNetworkPolicyList
	err := r.reader.List(context.Background(), &list, client.InNamespace(w.Namespace),
		client.MatchingFields{indexPolicyTarget: policyTargetKey(w.Kind, w.Name, d)}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil
	}
	return list.Items
}

// Labels returns the workload's pod template labels and its namespace's labels.
func (r *resolver) Labels(w workload.Ref) (pod, namespace map[string]string, ok bool) {
	info := r.stores.workload(string(w.Kind), w.Namespace, w.Name)
	if info == nil {
		return nil, nil, false
	}
	if obj, found, err := r.stores.namespaces.GetIndexer().GetByKey(w.Namespace); err == nil && found {
		if ns, isNS := obj.(*namespaceInfo); isNS {
			namespace = ns.Labels
		}
	}
	return info.templateLabels, namespace, true
}

// jobLabels are the labels that the Job controller adds to each Job's pods; they
// name one run, so a policy for a CronJob must not select by them.
var jobLabels = []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel}

// Selector returns the workload's pod selector and UID. For Jobs and CronJobs,
// whose generated selector names one run, it is the pod template's own labels.
func (r *resolver) Selector(_ context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool) {
	info := r.stores.workload(string(w.Kind), w.Namespace, w.Name)
	if info == nil {
		return nil, "", false
	}
	sel := info.selector
	if w.Kind == v1alpha1.WorkloadKindJob || w.Kind == v1alpha1.WorkloadKindCronJob {
		sel = templateSelector(info.templateLabels)
	}
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, "", false
	}
	return sel.DeepCopy(), info.UID, true
}

func templateSelector(labels map[string]string) *metav1.LabelSelector {
	m := map[string]string{}
	for k, v := range labels {
		m[k] = v
	}
	for _, k := range jobLabels {
		delete(m, k)
	}
	return &metav1.LabelSelector{MatchLabels: m}
}
