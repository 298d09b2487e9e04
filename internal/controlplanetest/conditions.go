package controlplanetest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// PolicyConditions reads the policy key from c, as the API server holds it,
// and returns its conditions' reasons by type.
func PolicyConditions(tb testing.TB, c client.Reader, key types.NamespacedName) map[string]string {
	tb.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	if err := c.Get(context.Background(), key, &p); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range p.Status.Conditions {
		out[c.Type] = c.Reason
	}
	return out
}
