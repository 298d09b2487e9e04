package enforcerextension

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func podLabels(t *testing.T, ns, name string) labels.Set {
	t.Helper()
	var p corev1.Pod
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return p.Labels
}
