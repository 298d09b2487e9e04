package e2e

import (
	"context"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// journeyRevisions returns the causes of the journey's policy's revisions,
// by number.
func journeyRevisions(t *testing.T) map[int64]string {
	t.Helper()
	var revs appsv1.ControllerRevisionList
	must(t, env.Client.List(context.Background(), &revs, client.InNamespace(apiPolicy.Namespace),
		client.MatchingLabels{v1alpha1.PolicyRevisionLabel: apiPolicy.Name}))
	causes := map[int64]string{}
	for _, r := range revs.Items {
		causes[r.Revision] = r.Annotations[v1alpha1.ChangeCauseAnnotation]
	}
	return causes
}

// waitRevisions waits until the journey's policy's revisions are want: their
// numbers and causes.
func waitRevisions(t *testing.T, want map[int64]string) {
	t.Helper()
	waitFor(t, "the policy's revisions", 30*time.Second, func() bool { return maps.Equal(journeyRevisions(t), want) })
}
