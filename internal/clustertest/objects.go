package clustertest

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pauseImage is the image of every container: nothing runs them, and a real
// cluster that did would run a container that does nothing.
const pauseImage = "registry.k8s.io/pause:3.10"

// cronSchedule is the schedule of every CronJob; no controller acts on it.
const cronSchedule = "0 * * * *"

// namespaces returns the table's namespaces, each once, in table order.
func namespaces() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range table {
		if !seen[r.namespace] {
			seen[r.namespace] = true
			out = append(out, r.namespace)
		}
	}
	return out
}

// serviceAccounts returns one object per service account that a pod runs as: no
// controller creates even "default" in a test API server, and a real one rejects
// a pod whose service account is missing.
func serviceAccounts() []*corev1.ServiceAccount {
	var out []*corev1.ServiceAccount
	seen := map[[2]string]bool{}
	for _, r := range table {
		key := [2]string{r.namespace, r.serviceAccountName()}
		if !seen[key] {
			seen[key] = true
			out = append(out, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: key[0], Name: key[1]}})
		}
	}
	return out
}

// podSpec is the spec of the row's template and pods. Jobs need a restart policy
// other than Always.
func podSpec(r row) corev1.PodSpec {
	restart := corev1.RestartPolicyAlways
	if r.kind == KindCronJob || r.kind == KindJob {
		restart = corev1.RestartPolicyNever
	}
	return corev1.PodSpec{
		ServiceAccountName: r.serviceAccountName(),
		HostNetwork:        r.hostNetwork,
		RestartPolicy:      restart,
		Containers:         []corev1.Container{{Name: "main", Image: pauseImage}},
	}
}

func podTemplate(r row, labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       podSpec(r),
	}
}

// newOwner returns the row's workload, or nil for a bare pod.
func newOwner(r row) client.Object {
	meta := metav1.ObjectMeta{Namespace: r.namespace, Name: r.name, Labels: maps.Clone(r.labels)}
	selector := &metav1.LabelSelector{MatchLabels: maps.Clone(r.labels)}
	replicas := ptr.To(int32(len(r.pods)))
	switch r.kind {
	case KindDeployment:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: replicas, Selector: selector, Template: podTemplate(r, maps.Clone(r.labels)),
		}}
	case KindStatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: replicas, Selector: selector, ServiceName: r.name, Template: podTemplate(r, maps.Clone(r.labels)),
		}}
	case KindDaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
			Selector: selector, Template: podTemplate(r, maps.Clone(r.labels)),
		}}
	case KindJob:
		return &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate(r, maps.Clone(r.labels))}}
	case KindCronJob:
		return &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{
			Schedule: cronSchedule,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(r.labels)},
				Spec:       batchv1.JobSpec{Template: podTemplate(r, maps.Clone(r.labels))},
			},
		}}
	}
	return nil
}

// newChild returns the ReplicaSet or Job that the row's workload owns through
// ref, or nil when the workload owns its pods itself. A Job gets no selector: the
// API server generates one, with labels of the Job's UID, as it does for the
// CronJob controller.
func newChild(r row, ref metav1.OwnerReference) client.Object {
	if r.childName() == "" {
		return nil
	}
	meta := metav1.ObjectMeta{
		Namespace: r.namespace, Name: r.childName(), Labels: maps.Clone(r.labels),
		OwnerReferences: []metav1.OwnerReference{ref},
	}
	switch r.kind {
	case KindDeployment:
		labels := maps.Clone(r.labels)
		labels[appsv1.DefaultDeploymentUniqueLabelKey] = r.child
		meta.Labels = maps.Clone(labels)
		return &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(len(r.pods))),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: podTemplate(r, labels),
		}}
	case KindCronJob:
		return &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate(r, maps.Clone(r.labels))}}
	}
	return nil
}

// templateLabels returns the labels of the pod template that the API server
// stored for controller, which its selector selects; nil when controller is nil.
func templateLabels(controller client.Object) map[string]string {
	switch o := controller.(type) {
	case *appsv1.ReplicaSet:
		return o.Spec.Template.Labels
	case *appsv1.StatefulSet:
		return o.Spec.Template.Labels
	case *appsv1.DaemonSet:
		return o.Spec.Template.Labels
	case *batchv1.Job:
		return o.Spec.Template.Labels
	}
	return nil
}

// newPod returns a pod of the row. ref is its controller, nil for a bare pod.
func newPod(r row, p pod, labels map[string]string, ref *metav1.OwnerReference) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.namespace, Name: p.name, GenerateName: r.generateName(), Labels: maps.Clone(labels),
		},
		Spec: podSpec(r),
	}
	// Bound, as the scheduler leaves it; no node object is needed for that.
	// No kubelet runs to confirm a bound pod's graceful deletion, so its
	// grace period is none: the garbage collector's deletion removes it at
	// once, as it does an unbound pod.
	out.Spec.NodeName = p.node()
	out.Spec.TerminationGracePeriodSeconds = new(int64)
	if ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out
}

// runningStatus is the status that the kubelet would report for the running pod.
func runningStatus(r row, p pod) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     p.ip,
		PodIPs:    []corev1.PodIP{{IP: p.ip}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	if r.hostNetwork {
		st.HostIP = p.ip
		st.HostIPs = []corev1.HostIP{{IP: p.ip}}
	}
	return st
}
