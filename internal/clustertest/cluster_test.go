package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// chainKinds are the kinds met from a pod up to a workload of each kind, the
// path that resolution must walk.
var chainKinds = map[string][]string{
	clustertest.KindDeployment:  {"ReplicaSet", clustertest.KindDeployment},
	clustertest.KindStatefulSet: {clustertest.KindStatefulSet},
	clustertest.KindDaemonSet:   {clustertest.KindDaemonSet},
	clustertest.KindCronJob:     {clustertest.KindJob, clustertest.KindCronJob},
	clustertest.KindJob:         {clustertest.KindJob},
	"":                          nil,
}

func TestCreate(t *testing.T) {
	fixtures := loadFixtureEnds(t)
	env := controlplanetest.Start(t, controlplanetest.Options{})
	ctx := t.Context()
	if err := clustertest.Create(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	r := resolver{c: env.Client}

	t.Run("fixture ends", func(t *testing.T) {
		for _, e := range fixtures.ends {
			t.Run(e.String(), func(t *testing.T) { checkEnd(ctx, t, r, e) })
		}
	})
	t.Run("table", func(t *testing.T) { checkTable(ctx, t, r, fixtures) })
}

// checkEnd checks that the end resolves: to a pod of its name and namespace (for
// an aggregated end, every pod of that generateName, of which there must be one),
// with the fixture's IP, service account and labels, whose controllers lead to
// the fixture's workload.
func checkEnd(ctx context.Context, t *testing.T, r resolver, e end) {
	var pods []corev1.Pod
	if e.prefix {
		var list corev1.PodList
		if err := r.c.List(ctx, &list, client.InNamespace(e.namespace)); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.GenerateName == e.name {
				pods = append(pods, p)
			}
		}
		if len(pods) == 0 {
			t.Fatalf("no pod in namespace %s has generateName %q", e.namespace, e.name)
		}
	} else {
		var p corev1.Pod
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.name}, &p); err != nil {
			t.Fatalf("pod %s/%s: %v", e.namespace, e.name, err)
		}
		pods = append(pods, p)
	}
	for i := range pods {
		p := &pods[i]
		checkRunning(t, p, e.ip)
		if e.serviceAccount != "" && p.Spec.ServiceAccountName != e.serviceAccount {
			t.Errorf("pod %s: service account %q, want %q", p.Name, p.Spec.ServiceAccountName, e.serviceAccount)
		}
		checkLabels(t, p, e.labels)
		kind, name, err := r.workload(ctx, p)
		if err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
			continue
		}
		if e.kind != "" && (kind != e.kind || name != e.workload) {
			t.Errorf("pod %s resolves to %s/%s, want %s/%s", p.Name, kind, name, e.kind, e.workload)
		}
		if kind == "" && e.prefix {
			t.Errorf("pod %s: an aggregated end resolves to a bare pod", p.Name)
		}
	}
}

// checkTable checks that the API server holds what Pods and Workloads say, that
// pod IPs are unique, and that no pod takes an IP that a fixture gives an end
// that is no pod.
func checkTable(ctx context.Context, t *testing.T, r resolver, fixtures *fixtureEnds) {
	ips := map[string]string{}
	tops := map[clustertest.Workload]bool{}
	hostNetwork := 0
	for _, want := range clustertest.Pods() {
		id := want.Namespace + "/" + want.Name
		if other, ok := ips[want.IP]; ok {
			t.Errorf("pods %s and %s share IP %s", other, id, want.IP)
		}
		ips[want.IP] = id
		if where, ok := fixtures.nonPodIPs[want.IP]; ok {
			t.Errorf("pod %s has IP %s, which the %s gives an end that is no pod", id, want.IP, where)
		}
		var p corev1.Pod
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: want.Namespace, Name: want.Name}, &p); err != nil {
			t.Errorf("pod %s: %v", id, err)
			continue
		}
		checkRunning(t, &p, want.IP)
		checkLabels(t, &p, want.Labels)
		if p.GenerateName != want.GenerateName || !strings.HasPrefix(p.Name, p.GenerateName) {
			t.Errorf("pod %s: generateName %q, want %q, a prefix of the name", id, p.GenerateName, want.GenerateName)
		}
		if p.Spec.ServiceAccountName != want.ServiceAccount {
			t.Errorf("pod %s: service account %q, want %q", id, p.Spec.ServiceAccountName, want.ServiceAccount)
		}
		var sa corev1.ServiceAccount
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: want.Namespace, Name: want.ServiceAccount}, &sa); err != nil {
			t.Errorf("service account of pod %s: %v", id, err)
		}
		if p.Spec.HostNetwork != want.HostNetwork {
			t.Errorf("pod %s: hostNetwork %v, want %v", id, p.Spec.HostNetwork, want.HostNetwork)
		}
		if want.HostNetwork {
			hostNetwork++
			if p.Status.HostIP != want.IP {
				t.Errorf("host-network pod %s: hostIP %q, want its pod IP %s", id, p.Status.HostIP, want.IP)
			}
		}
		kind, name, err := r.workload(ctx, &p)
		if err != nil {
			t.Errorf("pod %s: %v", id, err)
			continue
		}
		if kind != want.WorkloadKind || name != want.WorkloadName {
			t.Errorf("pod %s resolves to %s/%s, want %s/%s", id, kind, name, want.WorkloadKind, want.WorkloadName)
		}
		if kind != "" {
			tops[clustertest.Workload{Namespace: want.Namespace, Kind: kind, Name: name}] = true
		}
	}
	if hostNetwork != 1 {
		t.Errorf("%d host-network pods, want 1", hostNetwork)
	}
	workloads := clustertest.Workloads()
	for _, w := range workloads {
		if !tops[w] {
			t.Errorf("workload %v owns no pod", w)
		}
	}
	if len(tops) != len(workloads) {
		t.Errorf("pods resolve to %d workloads, Workloads lists %d", len(tops), len(workloads))
	}
}

// checkRunning checks the status that Create sets through the status subresource.
func checkRunning(t *testing.T, p *corev1.Pod, ip string) {
	t.Helper()
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s: phase %q", p.Name, p.Status.Phase)
	}
	if ip != "" && (p.Status.PodIP != ip || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != ip) {
		t.Errorf("pod %s: podIP %q, podIPs %v, want %s", p.Name, p.Status.PodIP, p.Status.PodIPs, ip)
	}
	if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	}) {
		t.Errorf("pod %s is not Ready", p.Name)
	}
}

func checkLabels(t *testing.T, p *corev1.Pod, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("pod %s: labels %v, want %s=%s among them", p.Name, p.Labels, k, v)
		}
	}
}

// resolver follows controller owner references as workload resolution does.
type resolver struct {
	c client.Client
}

// workload returns the kind and name at the top of the pod's controller chain,
// empty for a bare pod. It fails unless each reference is a controller
// reference that blocks owner deletion and carries its owner's UID, each owner
// with a selector selects the pod, and the chain has the shape that its top's
// kind makes.
func (r resolver) workload(ctx context.Context, pod *corev1.Pod) (kind, name string, err error) {
	var kinds []string
	var obj client.Object = pod
	for ref := metav1.GetControllerOf(obj); ref != nil; ref = metav1.GetControllerOf(obj) {
		if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			return "", "", fmt.Errorf("reference to %s %s does not block owner deletion", ref.Kind, ref.Name)
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return "", "", err
		}
		owner, err := r.c.Scheme().New(gv.WithKind(ref.Kind))
		if err != nil {
			return "", "", err
		}
		obj = owner.(client.Object)
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, obj); err != nil {
			return "", "", err
		}
		if obj.GetUID() != ref.UID {
			return "", "", fmt.Errorf("%s %s: UID %s, the reference has %s", ref.Kind, ref.Name, obj.GetUID(), ref.UID)
		}
		if sel := selector(obj); sel != nil {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				return "", "", err
			}
			if !s.Matches(labels.Set(pod.Labels)) {
				return "", "", fmt.Errorf("%s %s: selector %s does not select labels %v", ref.Kind, ref.Name, s, pod.Labels)
			}
		}
		kinds = append(kinds, ref.Kind)
		kind, name = ref.Kind, ref.Name
		if len(kinds) > 3 {
			return "", "", fmt.Errorf("controller chain %v too long", kinds)
		}
	}
	want, ok := chainKinds[kind]
	if !ok || !slices.Equal(kinds, want) {
		return "", "", fmt.Errorf("controller chain %v, want %v for a %s", kinds, want, kind)
	}
	return kind, name, nil
}

func selector(obj client.Object) *metav1.LabelSelector {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Selector
	case *appsv1.ReplicaSet:
		return o.Spec.Selector
	case *appsv1.StatefulSet:
		return o.Spec.Selector
	case *appsv1.DaemonSet:
		return o.Spec.Selector
	case *batchv1.Job:
		return o.Spec.Selector
	}
	return nil
}

// TestTableKinds needs no control plane: it checks that every pod's names follow
// the naming of its controller, as a resolver that parses names expects.
func TestTableKinds(t *testing.T) {
	for _, p := range clustertest.Pods() {
		if _, ok := chainKinds[p.WorkloadKind]; !ok {
			t.Errorf("pod %s/%s: workload kind %q", p.Namespace, p.Name, p.WorkloadKind)
		}
		if p.WorkloadKind == "" {
			continue
		}
		if !strings.HasPrefix(p.GenerateName, p.WorkloadName+"-") || !strings.HasPrefix(p.Name, p.GenerateName) {
			t.Errorf("pod %s/%s: generateName %q must start with %q and begin the pod name", p.Namespace, p.Name, p.GenerateName, p.WorkloadName+"-")
		}
		if len(p.Labels) == 0 {
			t.Errorf("pod %s/%s has no labels for a selector", p.Namespace, p.Name)
		}
	}
}
