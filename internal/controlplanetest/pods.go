package controlplanetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreatePod creates a bare pod in default, deleted at the test's end, and,
// when ip is set, gives it that address in its status, as the kubelet would:
// a replica's own pod, which the membership and the enforcer look up.
func CreatePod(t testing.TB, c client.Client, name, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "collector", Image: "collector"}}},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	if ip != "" {
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
