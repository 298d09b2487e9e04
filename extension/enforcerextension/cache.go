package enforcerextension

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Index names of the shared cache.
const (
	// indexPodIP indexes running pods by each of their IPs.
	indexPodIP = "status.podIPs"
	// indexGenerateName indexes pods by generateName, for Goldmane's aggregates.
	indexGenerateName = "metadata.generateName"
	// indexPolicyTarget indexes policies by "<Kind>/<name>/<Direction>".
	indexPolicyTarget = "spec.targetRef+direction"
)

// cachedTypes are the types the shared cache watches, all of them from the
// start so that a standby replica is as warm as the leader.
func cachedTypes() []client.Object {
	return []client.Object{
		&corev1.Pod{}, &corev1.Namespace{},
		&appsv1.ReplicaSet{}, &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
		&batchv1.Job{}, &batchv1.CronJob{},
		&v1alpha1.WorkloadNetworkPolicyProposal{}, &v1alpha1.WorkloadNetworkPolicy{},
	}
}

// newCache builds the shared cache. Pods and workloads are slimmed to what
// resolution reads, and handed out without a copy (nothing may change them), so
// that a cluster of tens of thousands of pods fits in a small memory limit.
func newCache(cfg *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	readOnly := cache.ByObject{Transform: slim, UnsafeDisableDeepCopy: ptr.To(true)}
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range cachedTypes()[:8] { // the Kubernetes types, not ours
		byObject[obj] = readOnly
	}
	return cache.New(cfg, cache.Options{
		Scheme:           scheme,
		ByObject:         byObject,
		DefaultTransform: cache.TransformStripManagedFields(),
	})
}

// addIndexes registers the cache's field indexes; they must exist before the
// cache starts.
func addIndexes(ctx context.Context, c cache.Cache) error {
	if err := c.IndexField(ctx, &corev1.Pod{}, indexPodIP, func(o client.Object) []string {
		p := o.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return nil // a finished pod's address belongs to the next pod
		}
		ips := make([]string, 0, len(p.Status.PodIPs)+1)
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
		return ips
	}); err != nil {
		return fmt.Errorf("pod IP index: %w", err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, indexGenerateName, func(o client.Object) []string {
		if g := o.GetGenerateName(); g != "" {
			return []string{g}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("pod generateName index: %w", err)
	}
	if err := c.IndexField(ctx, &v1alpha1.WorkloadNetworkPolicy{}, indexPolicyTarget, func(o client.Object) []string {
		p := o.(*v1alpha1.WorkloadNetworkPolicy)
		return []string{policyTargetKey(p.Spec.TargetRef.Kind, p.Spec.TargetRef.Name, p.Spec.Direction)}
	}); err != nil {
		return fmt.Errorf("policy target index: %w", err)
	}
	return nil
}

func policyTargetKey(kind v1alpha1.WorkloadKind, name string, d v1alpha1.Direction) string {
	return string(kind) + "/" + name + "/" + string(d)
}
