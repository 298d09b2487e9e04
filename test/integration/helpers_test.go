package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// createNode makes a Node with one internal address, removed when the test
// ends: what the entities of a policy are rendered as.
func createNode(t *testing.T, name, ip string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	must(t, env.Client.Create(ctx, node))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	must(t, env.Client.Status().Update(ctx, node))
}

// promote sets the promote label on proposal as `kubectl label` does, with a
// merge patch of the label alone: the writer may have written the proposal's
// status since the test read it, and a person's label does not conflict with
// that.
func promote(t *testing.T, proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.PromoteLabel, mode)))
	must(t, env.Client.Patch(context.Background(), proposal, patch))
}
