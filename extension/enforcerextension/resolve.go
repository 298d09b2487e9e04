package enforcerextension

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// resolver resolves flow ends to workloads from the shared cache.
type resolver struct {
	reader client.Reader
}

// ResolveIP resolves the running pod that has ip. Pods on the host network
// share their node's address, so an address that one of them has says nothing
// about which workload sent or received.
func (r *resolver) ResolveIP(ip string) (Workload, UnresolvedReason) {
	var pods corev1.PodList
	if err := r.reader.List(context.Background(), &pods, client.MatchingFields{indexPodIP: ip}); err != nil || len(pods.Items) == 0 {
		return Workload{}, UnresolvedNoPod
	}
	for i := range pods.Items {
		if pods.Items[i].Spec.HostNetwork {
			return Workload{}, UnresolvedHostNetwork
		}
	}
	return r.resolvePod(&pods.Items[0])
}

// ResolvePod resolves a pod by name, or Goldmane's "<generateName>*" through any
// pod of that generateName: they all belong to one ReplicaSet, Job or DaemonSet.
func (r *resolver) ResolvePod(namespace, name string) (Workload, UnresolvedReason) {
	ctx := context.Background()
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		var pods corev1.PodList
		if err := r.reader.List(ctx, &pods, client.InNamespace(namespace),
			client.MatchingFields{indexGenerateName: prefix}); err != nil || len(pods.Items) == 0 {
			return Workload{}, UnresolvedNoPod
		}
		return r.resolvePod(&pods.Items[0])
	}
	var pod corev1.Pod
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
		return Workload{}, UnresolvedNoPod
	}
	return r.resolvePod(&pod)
}

// resolvePod follows the pod's controller to its workload: a ReplicaSet to its
// Deployment, a Job to its CronJob when it has one.
func (r *resolver) resolvePod(p *corev1.Pod) (Workload, UnresolvedReason) {
	if p.Spec.HostNetwork {
		return Workload{}, UnresolvedHostNetwork
	}
	owner := metav1.GetControllerOf(p)
	if owner == nil {
		return Workload{}, UnresolvedBarePod
	}
	w := Workload{WorkloadRef: WorkloadRef{Namespace: p.Namespace, Name: owner.Name}, ServiceAccount: p.Spec.ServiceAccountName}
	if w.ServiceAccount == "" {
		w.ServiceAccount = "default"
	}
	ctx := context.Background()
	key := types.NamespacedName{Namespace: p.Namespace, Name: owner.Name}
	switch owner.Kind {
	case "ReplicaSet":
		var rs appsv1.ReplicaSet
		if err := r.reader.Get(ctx, key, &rs); err != nil {
			return Workload{}, UnresolvedUnsupportedOwner
		}
		d := metav1.GetControllerOf(&rs)
		if d == nil || d.Kind != "Deployment" {
			return Workload{}, UnresolvedUnsupportedOwner
		}
		w.Kind, w.Name = v1alpha1.WorkloadKindDeployment, d.Name
	case "StatefulSet":
		w.Kind = v1alpha1.WorkloadKindStatefulSet
	case "DaemonSet":
		w.Kind = v1alpha1.WorkloadKindDaemonSet
	case "Job":
		w.Kind = v1alpha1.WorkloadKindJob
		var job batchv1.Job
		if err := r.reader.Get(ctx, key, &job); err == nil {
			if c := metav1.GetControllerOf(&job); c != nil && c.Kind == "CronJob" {
				w.Kind, w.Name = v1alpha1.WorkloadKindCronJob, c.Name
			}
		}
	default:
		return Workload{}, UnresolvedUnsupportedOwner
	}
	return w, ""
}

// HasPolicy reports whether a WorkloadNetworkPolicy targets w in direction d.
func (r *resolver) HasPolicy(w WorkloadRef, d v1alpha1.Direction) bool {
	var list v1alpha1.WorkloadNetworkPolicyList
	err := r.reader.List(context.Background(), &list, client.InNamespace(w.Namespace),
		client.MatchingFields{indexPolicyTarget: policyTargetKey(w.Kind, w.Name, d)})
	return err == nil && len(list.Items) > 0
}

// jobLabels are the labels that the Job controller adds to each Job's pods; they
// name one run, so a policy for a CronJob must not select by them.
var jobLabels = []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel}

// Selector returns the workload's pod selector and UID. For Jobs and CronJobs,
// whose generated selector names one run, it is the pod template's own labels.
func (r *resolver) Selector(ctx context.Context, w WorkloadRef) (*metav1.LabelSelector, types.UID, bool) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	var sel *metav1.LabelSelector
	var uid types.UID
	switch w.Kind {
	case v1alpha1.WorkloadKindDeployment:
		var o appsv1.Deployment
		if r.reader.Get(ctx, key, &o) != nil {
			return nil, "", false
		}
		sel, uid = o.Spec.Selector, o.UID
	case v1alpha1.WorkloadKindStatefulSet:
		var o appsv1.StatefulSet
		if r.reader.Get(ctx, key, &o) != nil {
			return nil, "", false
		}
		sel, uid = o.Spec.Selector, o.UID
	case v1alpha1.WorkloadKindDaemonSet:
		var o appsv1.DaemonSet
		if r.reader.Get(ctx, key, &o) != nil {
			return nil, "", false
		}
		sel, uid = o.Spec.Selector, o.UID
	case v1alpha1.WorkloadKindJob:
		var o batchv1.Job
		if r.reader.Get(ctx, key, &o) != nil {
			return nil, "", false
		}
		sel, uid = templateSelector(o.Spec.Template.Labels), o.UID
	case v1alpha1.WorkloadKindCronJob:
		var o batchv1.CronJob
		if r.reader.Get(ctx, key, &o) != nil {
			return nil, "", false
		}
		sel, uid = templateSelector(o.Spec.JobTemplate.Spec.Template.Labels), o.UID
	}
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, "", false
	}
	return sel.DeepCopy(), uid, true
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
