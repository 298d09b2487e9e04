package enforcerextension

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The shared cache keeps pods, workloads, ControllerRevisions and namespaces as
// these compact records, not as API objects: a corev1.Pod is over a kilobyte
// even when empty, and a cluster has tens of thousands of pods. Each holds
// only what resolution, policy matching and a pod's revision read. They embed
// ObjectMeta with names and the creation time only, which lets client-go's
// informers key and index them.

// podInfo is a pod as the cache keeps it.
type podInfo struct {
	metav1.ObjectMeta
	ips []string
	// ownerKind and ownerName are the pod's controller, empty for a bare pod.
	ownerKind, ownerName string
	hostNetwork          bool
	// nodeName is the node the pod is scheduled on: a gap that the data
	// plane reports for a node concerns the workloads of its pods.
	nodeName string
	// started is the earliest time the pod can have held its addresses:
	// when its sandbox was ready (the PodReadyToStartContainers condition),
	// else its creation. A flow before it is never the pod's.
	started time.Time
	// ended is when the pod gave its addresses back: zero while it runs;
	// for a finished pod (Succeeded, Failed), when its last container
	// ended; for a deleted one (a tombstone), when the cache saw it go,
	// unless it finished before. A flow after it is never the pod's.
	ended time.Time
	// revision is, for a StatefulSet's or a DaemonSet's pod, its
	// controller-revision-hash label and its own containers' images: what
	// it says of the revision that it runs, since the cache keeps no
	// ControllerRevision's data. Zero for any other pod: a ReplicaSet's or
	// a Job's template says theirs. The pods of a revision share it.
	revision unique.Handle[template]
}

// finished reports whether the pod has ended: it runs no more.
func (p *podInfo) finished() bool { return !p.ended.IsZero() }

// heldAt reports whether the pod may have held its addresses at t.
func (p *podInfo) heldAt(t time.Time) bool {
	return !t.Before(p.started) && (p.ended.IsZero() || !t.After(p.ended))
}

// podStarted is the earliest time that pod can have held its addresses:
// the kubelet sets PodReadyToStartContainers once the sandbox and its
// network are up, after the CNI gave the pod its address.
func podStarted(o *corev1.Pod) time.Time {
	for _, c := range o.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue &&
			c.LastTransitionTime.After(o.CreationTimestamp.Time) {
			return c.LastTransitionTime.Time
		}
	}
	return o.CreationTimestamp.Time
}

// podFinished is when a finished pod gave its address back: when its last
// container ended, else when it stopped being ready, else now (the first
// time the cache sees it finished).
func podFinished(o *corev1.Pod, now time.Time) time.Time {
	var end time.Time
	for _, cs := range [][]corev1.ContainerStatus{o.Status.InitContainerStatuses, o.Status.ContainerStatuses} {
		for _, c := range cs {
			if t := c.State.Terminated; t != nil && t.FinishedAt.After(end) {
				end = t.FinishedAt.Time
			}
		}
	}
	if !end.IsZero() {
		return end
	}
	for _, c := range o.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return now
}

// workloadInfo is a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or
// CronJob as the cache keeps it.
type workloadInfo struct {
	metav1.ObjectMeta
	selector *metav1.LabelSelector
	// templateLabels are the pod template's labels: what a workload's pods carry.
	templateLabels map[string]string
	// ownerKind and ownerName are the controller (a ReplicaSet's Deployment, a
	// Job's CronJob).
	ownerKind, ownerName string
	// template is a ReplicaSet's or a CronJob's Job's pod template as a
	// revision: the ReplicaSet's pod-template-hash label, or the Job
	// template's hash (templateHash), with the images. Nil for the other
	// kinds. Each record has its own, not a unique.Handle as pods do: a
	// ReplicaSet's hash is its alone, so nothing would be shared, and a
	// handle's entry weighs more than the template.
	template *template
}

// controllerRevisionInfo is a ControllerRevision as the cache keeps it: its
// name, its creation and its controller (a StatefulSet or a DaemonSet). Not
// its data, the template, which is the bulk of it: a StatefulSet's or a
// DaemonSet's pod tells its own images (podInfo.revision).
type controllerRevisionInfo struct {
	metav1.ObjectMeta
	ownerKind, ownerName string
}

// template is a pod template as a revision of its workload: its hash and the
// images that its containers ask for. Pods hold it through a unique.Handle,
// so that the pods of one revision share one copy, which goes when no pod
// holds it any more.
type template struct {
	hash string
	// images are the template's spec.containers[].image, joined by
	// imageSeparator: what the template asked for (a tag, or a digest when
	// the template names one), not the digest that ran, which only a pod's
	// status.containerStatuses[].imageID tells. Init containers are left
	// out.
	images string
}

// imageSeparator joins a template's images; no image reference has one.
const imageSeparator = " "

func newTemplate(hash string, containers []corev1.Container) template {
	images := make([]string, len(containers))
	for i, c := range containers {
		images[i] = c.Image
	}
	return template{hash: hash, images: strings.Join(images, imageSeparator)}
}

// imageList returns the template's images, in a slice of the caller's own.
func (t template) imageList() []string {
	if t.images == "" {
		return nil
	}
	return strings.Split(t.images, imageSeparator)
}

// templateHash is a Job's pod template's revision hash: 8 hex digits of the
// FNV-1a hash of what its containers run, init containers first (each
// container's name, image, command, args and the names of its environment
// variables), not of the whole template: the API server adds labels of the
// run (job-name, controller-uid) to each Job's template, so the whole
// template differs from Job to Job; what runs does not.
func templateHash(spec *corev1.PodSpec) string {
	h := fnv.New32a()
	write := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		write("containers")
		for _, c := range cs {
			write("name=" + c.Name)
			write("image=" + c.Image)
			for _, a := range c.Command {
				write("command=" + a)
			}
			for _, a := range c.Args {
				write("arg=" + a)
			}
			for _, e := range c.Env {
				write("env=" + e.Name)
			}
		}
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// namespaceInfo is a namespace with its labels, which namespace selectors match.
type namespaceInfo struct {
	metav1.ObjectMeta
}

// interner shares the strings that many objects repeat (namespaces, owner
// names, generateNames, label keys and values), so that each is stored once.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil {
		in.m = map[string]string{}
	}
	in.m[s] = s
	return s
}

func (in *interner) labels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[in.str(k)] = in.str(v)
	}
	return out
}

func (in *interner) meta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: in.str(m.Namespace), GenerateName: in.str(m.GenerateName),
		UID: m.UID, ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp,
	}
}

func (in *interner) controller(m *metav1.ObjectMeta) (kind, name string) {
	if c := metav1.GetControllerOfNoCopy(m); c != nil {
		return in.str(c.Kind), in.str(c.Name)
	}
	return "", ""
}

// compact turns an API object into its compact record; anything else (a
// deletion tombstone) passes unchanged.
func (in *interner) compact(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		p := &podInfo{ObjectMeta: in.meta(&o.ObjectMeta), hostNetwork: o.Spec.HostNetwork, nodeName: in.str(o.Spec.NodeName),
			started: podStarted(o)}
		if o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			p.ended = podFinished(o, time.Now())
		}
		p.ownerKind, p.ownerName = in.controller(&o.ObjectMeta)
		if hash := o.Labels[appsv1.ControllerRevisionHashLabelKey]; hash != "" && (p.ownerKind == "StatefulSet" || p.ownerKind == "DaemonSet") {
			p.revision = unique.Make(newTemplate(hash, o.Spec.Containers))
		}
		for _, ip := range o.Status.PodIPs {
			p.ips = append(p.ips, ip.IP)
		}
		if len(p.ips) == 0 && o.Status.PodIP != "" {
			p.ips = []string{o.Status.PodIP}
		}
		return p, nil
	case *corev1.Namespace:
		ns := &namespaceInfo{ObjectMeta: in.meta(&o.ObjectMeta)}
		ns.Labels = in.labels(o.Labels)
		return ns, nil
	case *appsv1.ReplicaSet:
		w := in.workload(&o.ObjectMeta, nil, nil)
		t := newTemplate(o.Labels[appsv1.DefaultDeploymentUniqueLabelKey], o.Spec.Template.Spec.Containers)
		w.template = &t
		return w, nil
	case *appsv1.Deployment:
		return in.workload(&o.ObjectMeta, o.Spec.Selector, o.Spec.Template.Labels), nil
	case *appsv1.StatefulSet:
		return in.workload(&o.ObjectMeta, o.Spec.Selector, o.Spec.Template.Labels), nil
	case *appsv1.DaemonSet:
		return in.workload(&o.ObjectMeta, o.Spec.Selector, o.Spec.Template.Labels), nil
	case *batchv1.Job:
		w := in.workload(&o.ObjectMeta, nil, o.Spec.Template.Labels)
		if w.ownerKind == "CronJob" { // a Job of its own has no revisions
			t := newTemplate(templateHash(&o.Spec.Template.Spec), o.Spec.Template.Spec.Containers)
			w.template = &t
		}
		return w, nil
	case *batchv1.CronJob:
		return in.workload(&o.ObjectMeta, nil, o.Spec.JobTemplate.Spec.Template.Labels), nil
	case *appsv1.ControllerRevision:
		// Its name, namespace and creation only: no UID or resource version,
		// which nothing reads of it.
		r := &controllerRevisionInfo{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: in.str(o.Namespace),
			CreationTimestamp: o.CreationTimestamp}}
		r.ownerKind, r.ownerName = in.controller(&o.ObjectMeta)
		return r, nil
	}
	return obj, nil
}

func (in *interner) workload(m *metav1.ObjectMeta, sel *metav1.LabelSelector, template map[string]string) *workloadInfo {
	w := &workloadInfo{ObjectMeta: in.meta(m), templateLabels: in.labels(template)}
	if sel != nil {
		w.selector = &metav1.LabelSelector{MatchLabels: in.labels(sel.MatchLabels), MatchExpressions: sel.MatchExpressions}
	}
	w.ownerKind, w.ownerName = in.controller(m)
	return w
}
