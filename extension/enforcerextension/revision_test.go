package enforcerextension

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// No controller but the garbage collector runs on the test control plane:
// the tests create the ReplicaSets, ControllerRevisions, Jobs and pods as the
// workloads' controllers name and label them.

// TestRevisionOfADeploymentRolledToANewTemplate: a Deployment rolled from
// web:1 to web:2 has two ReplicaSets; a pod of each ran its own, with the
// ReplicaSet's creation and its template's images (not the pod's). A
// deleted pod keeps its revision within the grace period, and an address
// that a pod of the new template took over is the old pod's revision before
// the reuse and the new one's after.
func TestRevisionOfADeploymentRolledToANewTemplate(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "revision-deployment")
	ctx := context.Background()
	w := workload.Ref{Namespace: "rev-d", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	oldRS, oldPod := makeReplicaSetPod(t, w, "6c9f8d7b5", "web:1", "aaaaa", "10.43.0.1")
	// Time must pass because Kubernetes keeps creation times to the second:
	// the rollout must come in the next second.
	time.Sleep(time.Until(oldRS.CreationTimestamp.Add(time.Second + 10*time.Millisecond)))
	newRS, newPod := makeReplicaSetPod(t, w, "7d4b5c6f8", "web:2", "bbbbb", "10.43.0.2")
	oldRev := workload.Revision{Workload: w, Name: "web-6c9f8d7b5", Hash: "6c9f8d7b5", Created: oldRS.CreationTimestamp.Time, Images: []string{"web:1"}}
	newRev := workload.Revision{Workload: w, Name: "web-7d4b5c6f8", Hash: "7d4b5c6f8", Created: newRS.CreationTimestamp.Time, Images: []string{"web:2"}}
	if !newRev.Created.After(oldRev.Created) {
		t.Fatalf("the new ReplicaSet was created at %v, not after the old one's %v", newRev.Created, oldRev.Created)
	}
	waitPodRevision(t, e, newPod)

	checkRevision(t, "the old template's pod", oldRev)(e.PodRevision(w.Namespace, oldPod.Name))
	checkRevision(t, "the new template's pod", newRev)(e.PodRevision(w.Namespace, newPod.Name))
	checkRevision(t, "the old ReplicaSet by name", oldRev)(e.Revision(w.Namespace, oldRev.Name))
	checkRevision(t, "the new ReplicaSet by name", newRev)(e.Revision(w.Namespace, newRev.Name))
	checkRevision(t, "Goldmane's aggregate of the old ReplicaSet's pods", oldRev)(e.PodRevision(w.Namespace, "web-6c9f8d7b5-*"))
	checkRevision(t, "the old pod's address", oldRev)(e.IPRevision("10.43.0.1", time.Time{}))
	end := flow.Endpoint{Address: "10.43.0.2", Namespace: w.Namespace, Pod: newPod.Name}
	checkRevision(t, "a flow's end that names the new pod", newRev)(flow.EndpointRevision(e, &end, time.Now()))

	// The old pod goes; a pod of the new template takes its address in the
	// next second.
	beforeReuse := time.Now()
	must(t, env.Client.Delete(ctx, oldPod, &clientDeleteNow))
	waitFor(t, "the cache to see the old pod go", 10*time.Second, func() bool {
		return e.resolver.stores.pod(oldPod.Namespace, oldPod.Name) == nil
	})
	// Time must pass because Kubernetes keeps times to the second: the reuse
	// must come in the next second.
	time.Sleep(time.Until(beforeReuse.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	makePodOf(t, newRS, "ccccc", "10.43.0.1", newRS.Spec.Template.Labels)
	waitFor(t, "the new pod at the old address", 10*time.Second, func() bool {
		rev, ok := e.IPRevision("10.43.0.1", time.Time{})
		return ok && rev.Name == newRev.Name
	})

	checkRevision(t, "the deleted pod, within the grace period", oldRev)(e.PodRevision(w.Namespace, oldPod.Name))
	checkRevision(t, "the address, before the reuse", oldRev)(e.IPRevision("10.43.0.1", beforeReuse))
	checkRevision(t, "the address, after the reuse", newRev)(e.IPRevision("10.43.0.1", time.Now()))
	checkRevision(t, "the address, before any pod the cache remembers", workload.Revision{})(e.IPRevision("10.43.0.1", beforeReuse.Add(-time.Hour)))
	byAddress := flow.Endpoint{Address: "10.43.0.1"}
	checkRevision(t, "a flow's end known by the address, before the reuse", oldRev)(flow.EndpointRevision(e, &byAddress, beforeReuse))
	// The data plane names the deleted pod: its revision, never the
	// address's new holder's.
	named := flow.Endpoint{Address: "10.43.0.1", Namespace: w.Namespace, Pod: oldPod.Name}
	checkRevision(t, "a flow's end that names the deleted pod", oldRev)(flow.EndpointRevision(e, &named, time.Now()))
	// Goldmane's aggregate of the new ReplicaSet's pods: both ran it.
	checkRevision(t, "Goldmane's aggregate of the new ReplicaSet's pods", newRev)(e.PodRevision(w.Namespace, "web-7d4b5c6f8-*"))
	checkRevision(t, "Goldmane's aggregate of the old ReplicaSet's deleted pods", oldRev)(e.PodRevision(w.Namespace, "web-6c9f8d7b5-*"))
}

// TestRevisionOfStatefulSetAndDaemonSetPods: a StatefulSet's pod carries the
// name of its ControllerRevision as its controller-revision-hash, a
// DaemonSet's pod the hash of <daemonset>-<hash>; each ran that
// ControllerRevision, created when it was, with the pod's own images.
func TestRevisionOfStatefulSetAndDaemonSetPods(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "revision-controllerrevision")
	ns := "rev-s"
	createNamespace(t, ns)
	db := workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindStatefulSet, Name: "db"}
	agent := workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindDaemonSet, Name: "agent"}
	sts := createObject(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.Name},
		Spec: appsv1.StatefulSetSpec{Selector: selectorOf(db.Name), ServiceName: db.Name, Template: templateOf(db.Name, "postgres:17")}})
	ds := createObject(t, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agent.Name},
		Spec: appsv1.DaemonSetSpec{Selector: selectorOf(agent.Name), Template: templateOf(agent.Name, "agent:3")}})
	// The StatefulSet controller labels a ControllerRevision
	// controller.kubernetes.io/hash, the DaemonSet controller
	// controller-revision-hash.
	stsCR := createObject(t, controllerRevision(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), "db-5f6d7c8b9",
		map[string]string{"controller.kubernetes.io/hash": "5f6d7c8b9"}))
	dsCR := createObject(t, controllerRevision(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"), "agent-8b9c6d5f7",
		map[string]string{appsv1.ControllerRevisionHashLabelKey: "8b9c6d5f7"}))
	dbPod := newOwnedPod(ns, "db-0", "db-", sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	dbPod.Labels = map[string]string{"app": db.Name, appsv1.ControllerRevisionHashLabelKey: "db-5f6d7c8b9"}
	dbPod.Spec.Containers = []corev1.Container{{Name: "db", Image: "postgres:17"}, {Name: "exporter", Image: "exporter:0.15"}}
	createRunningPod(t, dbPod, "10.43.1.1")
	agentPod := newOwnedPod(ns, "agent-k7m2p", "agent-", ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
	agentPod.Labels = map[string]string{"app": agent.Name, appsv1.ControllerRevisionHashLabelKey: "8b9c6d5f7"}
	agentPod.Spec.Containers = []corev1.Container{{Name: "agent", Image: "agent:3"}}
	createRunningPod(t, agentPod, "10.43.1.2")
	waitPodRevision(t, e, dbPod)
	waitPodRevision(t, e, agentPod)

	dbRev := workload.Revision{Workload: db, Name: "db-5f6d7c8b9", Hash: "db-5f6d7c8b9", Created: stsCR.CreationTimestamp.Time,
		Images: []string{"postgres:17", "exporter:0.15"}}
	agentRev := workload.Revision{Workload: agent, Name: "agent-8b9c6d5f7", Hash: "8b9c6d5f7", Created: dsCR.CreationTimestamp.Time,
		Images: []string{"agent:3"}}
	checkRevision(t, "the StatefulSet's pod", dbRev)(e.PodRevision(ns, dbPod.Name))
	checkRevision(t, "the StatefulSet's ControllerRevision by name", dbRev)(e.Revision(ns, dbRev.Name))
	checkRevision(t, "the StatefulSet's pod's address", dbRev)(e.IPRevision("10.43.1.1", time.Time{}))
	checkRevision(t, "the DaemonSet's pod", agentRev)(e.PodRevision(ns, agentPod.Name))
	checkRevision(t, "the DaemonSet's ControllerRevision by name", agentRev)(e.Revision(ns, agentRev.Name))
	checkRevision(t, "Goldmane's aggregate of the DaemonSet's pods", agentRev)(e.PodRevision(ns, "agent-*"))

	// A second DaemonSet pod of another revision: the DaemonSet's pods
	// share their generateName, and no longer ran one revision.
	other := newOwnedPod(ns, "agent-q4w8z", "agent-", ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
	other.Labels = map[string]string{"app": agent.Name, appsv1.ControllerRevisionHashLabelKey: "9d7f8b6c5"}
	other.Spec.Containers = []corev1.Container{{Name: "agent", Image: "agent:4"}}
	createRunningPod(t, other, "10.43.1.3")
	// Its ControllerRevision is not there (yet): the revision is known
	// from the pod, its creation is not.
	waitFor(t, "the revision of "+other.Name, 10*time.Second, func() bool {
		_, ok := e.PodRevision(ns, other.Name)
		return ok
	})
	checkRevision(t, "a DaemonSet pod whose ControllerRevision the cache does not have",
		workload.Revision{Workload: agent, Name: "agent-9d7f8b6c5", Hash: "9d7f8b6c5", Images: []string{"agent:4"}})(e.PodRevision(ns, other.Name))
	checkRevision(t, "Goldmane's aggregate of DaemonSet pods of two revisions", workload.Revision{})(e.PodRevision(ns, "agent-*"))
}

// TestRevisionOfACronJobsPod: a CronJob's pod ran its Job's template, named
// <cronjob>-<hash of the template>. Two Jobs of one template (each with the
// labels of its own run, which the API server adds to the template) are one
// revision, created with the first; a Job of a changed template is another.
func TestRevisionOfACronJobsPod(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "revision-cronjob")
	ns := "rev-c"
	createNamespace(t, ns)
	cj := workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindCronJob, Name: "report"}
	cronJob := createObject(t, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cj.Name},
		Spec: batchv1.CronJobSpec{Schedule: "0 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec("report:1")}}})
	first := createJob(t, ns, cronJob, "report-29000000", jobSpec("report:1"))
	// Time must pass because Kubernetes keeps creation times to the second:
	// each Job must be created in a second of its own.
	time.Sleep(time.Until(first.CreationTimestamp.Add(time.Second + 10*time.Millisecond)))
	second := createJob(t, ns, cronJob, "report-29000060", jobSpec("report:1"))
	// Time must pass because Kubernetes keeps creation times to the second:
	// each Job must be created in a second of its own.
	time.Sleep(time.Until(second.CreationTimestamp.Add(time.Second + 10*time.Millisecond)))
	changed := createJob(t, ns, cronJob, "report-29000120", jobSpec("report:2"))
	if first.Spec.Template.Labels[batchv1.JobNameLabel] != first.Name || second.Spec.Template.Labels[batchv1.JobNameLabel] != second.Name {
		t.Fatalf("the API server gave the Jobs' templates no labels of their runs: %v, %v", first.Spec.Template.Labels, second.Spec.Template.Labels)
	}
	secondPod := makeJobPod(t, second, "x1y2z", "10.43.2.1")
	changedPod := makeJobPod(t, changed, "a1b2c", "10.43.2.2")
	waitPodRevision(t, e, changedPod)

	hashes := map[string]string{}
	for _, job := range []*batchv1.Job{first, second, changed} {
		hashes[job.Name] = templateHash(&job.Spec.Template.Spec)
		if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(hashes[job.Name]) {
			t.Fatalf("Job %s: template hash %q, want 8 hex digits", job.Name, hashes[job.Name])
		}
	}
	if hashes[first.Name] != hashes[second.Name] || hashes[first.Name] == hashes[changed.Name] {
		t.Fatalf("template hashes %v: want the first two alike, the changed one apart", hashes)
	}
	rev := workload.Revision{Workload: cj, Name: "report-" + hashes[first.Name], Hash: hashes[first.Name],
		Created: first.CreationTimestamp.Time, Images: []string{"report:1"}}
	changedRev := workload.Revision{Workload: cj, Name: "report-" + hashes[changed.Name], Hash: hashes[changed.Name],
		Created: changed.CreationTimestamp.Time, Images: []string{"report:2"}}
	checkRevision(t, "the second Job's pod: the first Job's revision", rev)(e.PodRevision(ns, secondPod.Name))
	checkRevision(t, "the revision by name", rev)(e.Revision(ns, rev.Name))
	checkRevision(t, "the changed Job's pod", changedRev)(e.PodRevision(ns, changedPod.Name))
	checkRevision(t, "the changed Job's pod's address", changedRev)(e.IPRevision("10.43.2.2", time.Time{}))
	checkRevision(t, "Goldmane's aggregate of the changed Job's pods", changedRev)(e.PodRevision(ns, "report-29000120-*"))
}

// TestNoRevision: a bare pod, a pod on the host network, a Job's own pod, a
// pod that the cache does not know and a name that is no revision have none.
func TestNoRevision(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "revision-none")
	ns := "rev-n"
	createNamespace(t, ns)
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "debug"},
		Spec: corev1.PodSpec{NodeName: "worker-1", TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
	createRunningPod(t, bare, "10.43.3.1")
	w := workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindDeployment, Name: "node-agent"}
	// A pod of the ReplicaSet that has a revision, and one on the host
	// network that has none.
	rs, pod := makeReplicaSetPod(t, w, "5b6c7d8f9", "node-agent:1", "ppppp", "10.43.3.3")
	host := newOwnedPod(ns, "node-agent-5b6c7d8f9-hnet1", "node-agent-5b6c7d8f9-", rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	host.Spec.HostNetwork = true
	createRunningPod(t, host, "172.18.0.2")
	job := createJob(t, ns, nil, fmt.Sprintf("migrate-%d", time.Now().UnixNano()%1e9), jobSpec("migrate:1"))
	jobPod := makeJobPod(t, job, "m1n2o", "10.43.3.2")
	waitResolved(t, e, "10.43.3.2", workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindJob, Name: job.Name})
	waitFor(t, "the bare pod in the cache", 10*time.Second, func() bool { return e.resolver.stores.pod(ns, bare.Name) != nil })
	waitFor(t, "the host-network pod in the cache", 10*time.Second, func() bool { return e.resolver.stores.pod(ns, host.Name) != nil })

	waitPodRevision(t, e, pod)

	// The addresses resolve, for their reasons: not one of them is a
	// revision for want of a pod.
	for ip, want := range map[string]workload.Unresolved{"10.43.3.1": workload.UnresolvedBarePod, "172.18.0.2": workload.UnresolvedHostNetwork} {
		if _, reason := e.ResolveIP(ip, time.Time{}); reason != want {
			t.Fatalf("%s: %q, want %q", ip, reason, want)
		}
	}
	none := workload.Revision{}
	checkRevision(t, "a bare pod", none)(e.PodRevision(ns, bare.Name))
	checkRevision(t, "a bare pod's address", none)(e.IPRevision("10.43.3.1", time.Time{}))
	checkRevision(t, "a pod on the host network", none)(e.PodRevision(ns, host.Name))
	checkRevision(t, "a host-network pod's address", none)(e.IPRevision("172.18.0.2", time.Time{}))
	checkRevision(t, "a Job's own pod", none)(e.PodRevision(ns, jobPod.Name))
	checkRevision(t, "a pod that the cache does not know", none)(e.PodRevision(ns, "ghost"))
	checkRevision(t, "a name that is no revision", none)(e.Revision(ns, "ghost-12345678"))
	checkRevision(t, "the Job by name", none)(e.Revision(ns, job.Name))
}

// checkRevision returns a check of PodRevision's, IPRevision's or Revision's
// answer against want: the zero want is no revision.
func checkRevision(t *testing.T, what string, want workload.Revision) func(workload.Revision, bool) {
	t.Helper()
	return func(got workload.Revision, ok bool) {
		t.Helper()
		if wantOK := want.Name != ""; ok != wantOK {
			t.Errorf("%s: %+v %v, want %v", what, got, ok, wantOK)
			return
		}
		if got.Workload != want.Workload || got.Name != want.Name || got.Hash != want.Hash || !got.Created.Equal(want.Created) ||
			!slices.Equal(got.Images, want.Images) {
			t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
}

// waitPodRevision waits until the cache holds pod as the test left it (its
// address included) and knows its revision with its creation.
func waitPodRevision(t *testing.T, e *enforcer, pod *corev1.Pod) {
	t.Helper()
	waitFor(t, "the revision of "+pod.Namespace+"/"+pod.Name, 10*time.Second, func() bool {
		p := e.resolver.stores.pod(pod.Namespace, pod.Name)
		rev, ok := e.PodRevision(pod.Namespace, pod.Name)
		return p != nil && p.ResourceVersion == pod.ResourceVersion && ok && !rev.Created.IsZero()
	})
}

// createObject creates obj, deletes it when the test ends, and returns it as
// the API server stored it.
func createObject[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Create(ctx, obj))
	// Deleted at once, its dependents after it: a test that runs again
	// creates it anew.
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), obj, &clientDeleteNow, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	return obj
}

func selectorOf(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func templateOf(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
}

// controllerRevision is the ControllerRevision name of owner, labelled as its
// controller labels it, with a template in its data as the controllers write
// it.
func controllerRevision(owner metav1.Object, kind schema.GroupVersionKind, name string, labels map[string]string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, kind)}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c","image":"x"}]}}}}`)},
		Revision: 1,
	}
}

// makeReplicaSetPod creates Deployment w if need be, its ReplicaSet of
// pod-template-hash hash whose template runs image, and a running pod of it
// with suffix at ip (none for ""). The pod's own image differs from the
// template's: a revision's images are its template's.
func makeReplicaSetPod(t *testing.T, w workload.Ref, hash, image, suffix, ip string) (*appsv1.ReplicaSet, *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	createNamespace(t, w.Namespace)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name},
		Spec: appsv1.DeploymentSpec{Selector: selectorOf(w.Name), Template: templateOf(w.Name, image)}}
	if err := env.Client.Create(ctx, d); err != nil && !alreadyExists(err) {
		t.Fatal(err)
	}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(d), d))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), d, &clientDeleteNow) })
	labels := map[string]string{"app": w.Name, appsv1.DefaultDeploymentUniqueLabelKey: hash}
	tmpl := templateOf(w.Name, image)
	tmpl.Labels = labels
	rs := createObject(t, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-" + hash, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	})
	return rs, makePodOf(t, rs, suffix, ip, labels)
}

// makePodOf creates a running pod of ReplicaSet rs with suffix at ip.
func makePodOf(t *testing.T, rs *appsv1.ReplicaSet, suffix, ip string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pod := newOwnedPod(rs.Namespace, rs.Name+"-"+suffix, rs.Name+"-", rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pod.Labels = labels
	createRunningPod(t, pod, ip)
	return pod
}

// createRunningPod creates pod and reports it running at ip (none for ""),
// as the kubelet does, and deletes it when the test ends.
func createRunningPod(t *testing.T, pod *corev1.Pod, ip string) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Create(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod, &clientDeleteNow) })
	if ip == "" {
		return
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	must(t, env.Client.Status().Update(ctx, pod))
}

func jobSpec(image string) batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "job"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: image, Command: []string{"/run"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "full"}}}}},
	}}
}

// createJob creates Job namespace/name of spec, controlled by cronJob unless
// nil.
func createJob(t *testing.T, namespace string, cronJob *batchv1.CronJob, name string, spec batchv1.JobSpec) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	if cronJob != nil {
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cronJob, batchv1.SchemeGroupVersion.WithKind("CronJob"))}
	}
	return createObject(t, job)
}

// makeJobPod creates a running pod of job with suffix at ip.
func makeJobPod(t *testing.T, job *batchv1.Job, suffix, ip string) *corev1.Pod {
	t.Helper()
	pod := newOwnedPod(job.Namespace, job.Name+"-"+suffix, job.Name+"-", job, batchv1.SchemeGroupVersion.WithKind("Job"))
	pod.Labels = job.Spec.Template.Labels
	createRunningPod(t, pod, ip)
	return pod
}
