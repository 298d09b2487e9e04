package enforcerextension

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slim keeps of a cached Kubernetes object only what resolution reads: names,
// labels, owners, the pod's addresses, host network and service account, the
// workloads' selectors and pod template labels. The rest (containers, volumes,
// annotations, managed fields) is most of an object's size.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{
			ObjectMeta: slimMeta(o.ObjectMeta),
			Spec: corev1.PodSpec{
				HostNetwork:        o.Spec.HostNetwork,
				ServiceAccountName: o.Spec.ServiceAccountName,
			},
			Status: corev1.PodStatus{Phase: o.Status.Phase, PodIP: o.Status.PodIP, PodIPs: o.Status.PodIPs},
		}, nil
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: slimMeta(o.ObjectMeta)}, nil
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: slimMeta(o.ObjectMeta)}, nil
	case *appsv1.Deployment:
		return &appsv1.Deployment{ObjectMeta: slimMeta(o.ObjectMeta),
			Spec: appsv1.DeploymentSpec{Selector: o.Spec.Selector}}, nil
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: slimMeta(o.ObjectMeta),
			Spec: appsv1.StatefulSetSpec{Selector: o.Spec.Selector}}, nil
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: slimMeta(o.ObjectMeta),
			Spec: appsv1.DaemonSetSpec{Selector: o.Spec.Selector}}, nil
	case *batchv1.Job:
		return &batchv1.Job{ObjectMeta: slimMeta(o.ObjectMeta), Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: o.Spec.Template.Labels}},
		}}, nil
	case *batchv1.CronJob:
		return &batchv1.CronJob{ObjectMeta: slimMeta(o.ObjectMeta), Spec: batchv1.CronJobSpec{
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: o.Spec.JobTemplate.Spec.Template.Labels}},
			}},
		}}, nil
	}
	return obj, nil
}

func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
		ResourceVersion: m.ResourceVersion, Labels: m.Labels, OwnerReferences: m.OwnerReferences,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}
