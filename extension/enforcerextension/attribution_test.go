package enforcerextension

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The workloads of the attribution tests, each in a namespace of its own, so
// that they share nothing with the fixtures' cluster.
var (
	attrClient = workload.Ref{Namespace: "attr-a", Kind: v1alpha1.WorkloadKindDeployment, Name: "client"}
	attrServer = workload.Ref{Namespace: "attr-b", Kind: v1alpha1.WorkloadKindDeployment, Name: "server"}
	attrOther  = workload.Ref{Namespace: "attr-c", Kind: v1alpha1.WorkloadKindDeployment, Name: "other"}
)

// TestAttributionAtTheFlowsTime: a flow is attributed as the cluster stood
// at the flow's time. The pod a/client-abc123-xyz at 10.42.0.50 calls
// b/server; it is deleted, and 10.42.0.50 now belongs to a pod of c/other.
// A flow that names the deleted pod (Hubble's local and remote shapes) is
// its workload's, never c/other's; a flow known by the address alone is the
// pod's that held it then; once the grace period is over, the pod is
// forgotten, and the same flows are not attributed to anyone.
func TestAttributionAtTheFlowsTime(t *testing.T) {
	controlplanetest.Require(t)
	const grace = 4 * time.Second
	e, _ := startLoggedReplicaOn(t, env, "attribution", "attribution-0", func(c *Config) { c.PodGracePeriod = grace })
	ctx := context.Background()
	clientPod := makeDeploymentPod(t, attrClient, "abc123", "xyz", "10.42.0.50")
	makeDeploymentPod(t, attrServer, "def456", "uvw", "10.42.1.7")
	waitResolved(t, e, "10.42.0.50", attrClient)
	beforeReuse := time.Now()

	must(t, env.Client.Delete(ctx, clientPod, &clientDeleteNow))
	waitFor(t, "the cache to see the client's pod go", 10*time.Second, func() bool {
		return e.resolver.stores.pod(clientPod.Namespace, clientPod.Name) == nil
	})
	// The address is free: a new pod of another workload takes it.
	// Kubernetes keeps a pod's times to the second: the new pod starts in
	// the next second, so that its start, as the API says it, is after the
	// flows of the old one. (Within one second, two pods would both claim
	// the address, and a flow known by the address alone would be
	// attributed to neither: TestAddressTwoPodsClaimIsNotAttributed.)
	time.Sleep(time.Until(beforeReuse.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	makeDeploymentPod(t, attrOther, "aaa111", "rst", "10.42.0.50")
	waitResolved(t, e, "10.42.0.50", attrOther)

	local := flow.Endpoint{Address: "10.42.0.50", Namespace: "attr-a", Pod: clientPod.Name,
		WorkloadKind: "Deployment", WorkloadName: "client", Identity: "51234"}
	remote := flow.Endpoint{Address: "10.42.0.50", Namespace: "attr-a", Pod: clientPod.Name, Identity: "51234"}
	byAddress := flow.Endpoint{Address: "10.42.0.50"}
	check := func(what string, end flow.Endpoint, at time.Time, want workload.Ref, wantReason workload.Unresolved) {
		t.Helper()
		got, reason := flow.ResolveEndpoint(e, &end, at)
		if got != want || reason != wantReason {
			t.Errorf("%s: %v %q, want %v %q", what, got, reason, want, wantReason)
		}
	}
	check("Hubble's local shape, within the grace period", local, time.Now(), attrClient, "")
	check("Hubble's remote shape (a name, no workload), within the grace period", remote, time.Now(), attrClient, "")
	check("the address, at a time before the reuse", byAddress, beforeReuse, attrClient, "")
	check("the address, now", byAddress, time.Now(), attrOther, "")
	check("the address, at a time before either pod", byAddress, beforeReuse.Add(-time.Hour), workload.Ref{}, workload.UnresolvedTooOld)

	waitFor(t, "the grace period to end", 3*grace, func() bool {
		_, reason := e.ResolvePod(clientPod.Namespace, clientPod.Name)
		return reason == workload.UnresolvedNoPod
	})
	// The data plane's name of the workload still attributes the local
	// shape: the Deployment is there. The remote shape names no workload.
	check("Hubble's local shape, after the grace period", local, time.Now(), attrClient, "")
	check("Hubble's remote shape, after the grace period", remote, time.Now(), workload.Ref{}, workload.UnresolvedNoPod)
	check("the address, at a time before the reuse, after the grace period", byAddress, beforeReuse, workload.Ref{}, workload.UnresolvedTooOld)
	check("the address, now, after the grace period", byAddress, time.Now(), attrOther, "")
}

// TestAddressTwoPodsClaimIsNotAttributed: when two pods hold one address at
// once (a reuse within the clocks' skew, a stale status), a flow known by
// that address alone is not attributed to either.
func TestAddressTwoPodsClaimIsNotAttributed(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "ambiguous")
	a := workload.Ref{Namespace: "attr-d", Kind: v1alpha1.WorkloadKindDeployment, Name: "first"}
	b := workload.Ref{Namespace: "attr-d", Kind: v1alpha1.WorkloadKindDeployment, Name: "second"}
	makeDeploymentPod(t, a, "bbb222", "aaaaa", "10.42.2.9")
	waitResolved(t, e, "10.42.2.9", a)
	makeDeploymentPod(t, b, "ccc333", "bbbbb", "10.42.2.9")
	waitFor(t, "both claims", 10*time.Second, func() bool {
		_, reason := e.ResolveIP("10.42.2.9", time.Time{})
		return reason == workload.UnresolvedAmbiguousAddress
	})
}

// TestFinishedJobPodKeepsItsAddressUntilItEnded: a Job's pod that finished
// keeps its object but gave its address back when its container ended; a
// later pod with that address has the flows after that, and the Job's pod
// those before.
func TestFinishedJobPodKeepsItsAddressUntilItEnded(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "finished")
	ctx := context.Background()
	// A name of its own for each run: a deleted Job lingers while its
	// dependents go.
	attrJob := workload.Ref{Namespace: "attr-j", Kind: v1alpha1.WorkloadKindJob, Name: fmt.Sprintf("migrate-%d", time.Now().UnixNano()%1e9)}
	createNamespace(t, attrJob.Namespace)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: attrJob.Namespace, Name: attrJob.Name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "migrate"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "migrate:1"}}},
		}},
	}
	must(t, env.Client.Create(ctx, job))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), job, &clientDeleteNow) })
	pod := newOwnedPod(attrJob.Namespace, attrJob.Name+"-x1y2z", attrJob.Name+"-", job, batchv1.SchemeGroupVersion.WithKind("Job"))
	must(t, env.Client.Create(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod, &clientDeleteNow) })
	running := time.Now()
	ended := metav1.NewTime(running.Add(time.Second).Truncate(time.Second))
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, PodIP: "10.42.3.3", PodIPs: []corev1.PodIP{{IP: "10.42.3.3"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: ended}}}}}
	must(t, env.Client.Status().Update(ctx, pod))
	// Time must pass because Kubernetes keeps times to the second: the next pod
	// must be created after the Job's end.
	time.Sleep(time.Until(ended.Add(50 * time.Millisecond)))
	makeDeploymentPod(t, attrOther, "ddd444", "next1", "10.42.3.3")
	waitResolved(t, e, "10.42.3.3", attrOther)
	if got, reason := e.ResolveIP("10.42.3.3", running); got != attrJob || reason != "" {
		t.Errorf("a flow while the Job's pod ran: %v %q, want %v", got, reason, attrJob)
	}
}

// TestGoldmaneAggregateOfDeletedPods: Goldmane's "<generateName>*" names the
// pods of one ReplicaSet; a flow that arrives after every one of them was
// deleted still finds their workload within the grace period.
func TestGoldmaneAggregateOfDeletedPods(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "aggregate")
	w := workload.Ref{Namespace: "attr-g", Kind: v1alpha1.WorkloadKindDeployment, Name: "api"}
	pod := makeDeploymentPod(t, w, "eee555", "gone1", "10.42.4.4")
	waitResolved(t, e, "10.42.4.4", w)
	must(t, env.Client.Delete(context.Background(), pod, &clientDeleteNow))
	// The informer drops the pod from its store before its handler records
	// the ended pod: the wait is for both, the pod gone and its aggregate
	// name resolved, not for the first alone (under load the handler came
	// after the look).
	var got workload.Ref
	var reason workload.Unresolved
	if !testwait.Try(t, "the pod gone from the cache and api-eee555-* resolved", 10*time.Second, func() bool {
		got, reason = e.ResolvePod(w.Namespace, "api-eee555-*")
		return e.resolver.stores.pod(pod.Namespace, pod.Name) == nil && got == w && reason == ""
	}) {
		t.Errorf("api-eee555-* of a deleted pod: %v %q, want %v", got, reason, w)
	}
}

var clientDeleteNow = client.DeleteOptions{GracePeriodSeconds: new(int64)}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitResolved waits until ip resolves, now, to w.
func waitResolved(t *testing.T, e *enforcer, ip string, w workload.Ref) {
	t.Helper()
	waitFor(t, ip+" to resolve to "+w.String(), 10*time.Second, func() bool {
		got, reason := e.ResolveIP(ip, time.Time{})
		return got == w && reason == ""
	})
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !alreadyExists(err) {
		t.Fatal(err)
	}
}

// makeDeploymentPod creates Deployment w (and its namespace) if need be, its
// ReplicaSet of pod-template-hash hash, and a running pod of it with suffix
// at ip, as the kubelet reports it.
func makeDeploymentPod(t *testing.T, w workload.Ref, hash, suffix, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	createNamespace(t, w.Namespace)
	labels := map[string]string{"app": w.Name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: w.Name + ":1"}}}}},
	}
	if err := env.Client.Create(ctx, d); err != nil && !alreadyExists(err) {
		t.Fatal(err)
	}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(d), d))
	rsLabels := map[string]string{"app": w.Name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-" + hash, Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rsLabels}, Spec: d.Spec.Template.Spec}},
	}
	if err := env.Client.Create(ctx, rs); err != nil && !alreadyExists(err) {
		t.Fatal(err)
	}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rs), rs))
	pod := newOwnedPod(w.Namespace, w.Name+"-"+hash+"-"+suffix, w.Name+"-"+hash+"-", rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	must(t, env.Client.Create(ctx, pod))
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	must(t, env.Client.Status().Update(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod, &clientDeleteNow) })
	return pod
}

func alreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// newOwnedPod is a pod named name of generateName, controlled by owner of
// kind gvk, bound to a node (no scheduler runs).
func newOwnedPod(namespace, name, generateName string, owner metav1.Object, gvk schema.GroupVersionKind) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, GenerateName: generateName,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}},
		Spec: corev1.PodSpec{NodeName: "worker-1", TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "c", Image: "app:1"}}},
	}
}

// TestAGoneJobPodIsItsCronJobs: a flow that names a pod that the cache no
// longer knows, and its Job (Hubble's workloads), is attributed as resolving
// the pod would: to the Job's CronJob.
func TestAGoneJobPodIsItsCronJobs(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "gone-job")
	end := flow.Endpoint{Address: "10.0.9.77", Namespace: "batch", Pod: "report-29000000-gone1", WorkloadKind: "Job", WorkloadName: "report-29000000"}
	want := workload.Ref{Namespace: "batch", Kind: v1alpha1.WorkloadKindCronJob, Name: "report"}
	if got, reason := flow.ResolveEndpoint(e, &end, time.Now()); got != want || reason != "" {
		t.Fatalf("%v %q, want %v", got, reason, want)
	}
}
