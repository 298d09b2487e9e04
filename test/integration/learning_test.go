package integration

import (
	"bytes"
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the test sees")

// proposalsGolden holds the proposals that the Hubble and Goldmane fixtures
// teach, with the cluster that clustertest creates.
const proposalsGolden = "testdata/proposals.golden.yaml"

// provenProposal is what the golden file keeps of a proposal: what a user sees.
type provenProposal struct {
	Namespace string              `json:"namespace"`
	Name      string              `json:"name"`
	Labels    map[string]string   `json:"labels,omitempty"`
	Owners    []string            `json:"owners"`
	Spec      v1alpha1.PolicySpec `json:"spec"`
}

// proposals lists the cluster's proposals, sorted, with the generations of
// their specs (their status, the observed edges, changes with the flows).
func proposals(t *testing.T) ([]provenProposal, map[string]int64) {
	t.Helper()
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(context.Background(), &list))
	var out []provenProposal
	versions := map[string]int64{}
	for _, p := range list.Items {
		pp := provenProposal{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, Spec: p.Spec}
		for _, o := range p.OwnerReferences {
			pp.Owners = append(pp.Owners, o.Kind+"/"+o.Name)
		}
		out = append(out, pp)
		versions[p.Namespace+"/"+p.Name] = p.Generation
	}
	slices.SortFunc(out, func(a, b provenProposal) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, versions
}

// TestFixturesBecomeProposals replays the Hubble and Goldmane fixtures through
// the learning path and checks the proposals it writes against the golden file;
// then replays them again, with a fresh writer as after a restart, and checks
// that no spec is written, and each proposal's status (its observed edges'
// flows) at most once.
func TestFixturesBecomeProposals(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	p := startPipeline(t, sources{hubble: true, goldmane: true})
	edges := p.Settled(t, learningprocessor.MetricEdges, 2*time.Second)
	p.WaitWritten(t)
	writes, statusWrites := p.SpecWrites(), p.StatusWrites()
	got, versions := proposals(t)
	b, err := yaml.Marshal(got)
	must(t, err)
	if *update {
		must(t, os.WriteFile(proposalsGolden, b, 0o644))
	}
	want, err := os.ReadFile(proposalsGolden)
	must(t, err)
	if !bytes.Equal(b, want) {
		t.Fatalf("proposals differ from %s (rerun with -update to see them):\n%s", proposalsGolden, b)
	}
	// Edges that arrive on both sides of a write round cost a proposal a second
	// write; more would mean writes follow flows, not edges.
	if writes < int64(len(got)) || writes > 2*int64(len(got)) {
		t.Errorf("%d spec writes for %d proposals", writes, len(got))
	}
	// Each proposal's status is written with each write of its spec, and
	// once more where a gap of the fixtures (Hubble's lost events) comes
	// after that write: Coverage turns False, which is written at once.
	// Further reports of a gap wait, as the flow counts do.
	if limit := writes + gapped(t); statusWrites > limit {
		t.Errorf("%d status writes for %d proposals, %d spec writes: want at most %d", statusWrites, len(got), writes, limit)
	}
	t.Logf("%d learned edges, %d proposals, %d spec writes, %d status writes", edges, len(got), writes, statusWrites)
	p.Stop(t)

	replay := startPipeline(t, sources{hubble: true, goldmane: true})
	if n := replay.Settled(t, learningprocessor.MetricEdges, 2*time.Second); n != edges {
		t.Fatalf("the replay learned %d edges, the first run %d", n, edges)
	}
	replay.WaitWritten(t) // every proposal's round, in which it finds no spec to write
	if n := replay.SpecWrites(); n != 0 {
		t.Errorf("the replay wrote %d specs", n)
	}
	// The replay's flows and gap reports change no condition's status: each
	// proposal's counts and gaps go out in one status write.
	if n := replay.StatusWrites(); n > int64(len(got)) {
		t.Errorf("the replay wrote %d statuses for %d proposals", n, len(got))
	}
	_, after := proposals(t)
	for k, v := range versions {
		if after[k] != v {
			t.Errorf("%s changed on replay: generation %d -> %d", k, v, after[k])
		}
	}
}

// gapped is how many proposals show a coverage gap.
func gapped(t *testing.T) int64 {
	t.Helper()
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(context.Background(), &list))
	var n int64
	for i := range list.Items {
		if len(list.Items[i].Status.CoverageGaps) > 0 {
			n++
		}
	}
	return n
}

// TestPolicyStopsLearning: once a WorkloadNetworkPolicy governs a workload and
// direction, its flows go on as violation candidates and no proposal comes back
// for it, while the other proposals stay as they are.
func TestPolicyStopsLearning(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	learnFixtures(t)
	_, before := proposals(t)
	frontendEgress := &v1alpha1.WorkloadNetworkPolicyProposal{}
	must(t, env.Client.Get(ctx, key("shop", "deployment-frontend-egress"), frontendEgress))
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "frontend-egress"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: frontendEgress.Spec, Mode: v1alpha1.PolicyModeMonitor},
	}
	must(t, env.Client.Create(ctx, policy))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	must(t, env.Client.Delete(ctx, frontendEgress))

	p := startPipeline(t, sources{hubble: true, goldmane: true})
	p.Settled(t, learningprocessor.MetricEdges, 2*time.Second)
	p.WaitWritten(t)
	if n := p.Counter(learningprocessor.MetricCandidates, nil); n == 0 {
		t.Error("no violation candidates for a workload that a policy governs")
	}
	if n := p.SpecWrites(); n != 0 {
		t.Errorf("%d spec writes", n)
	}
	_, after := proposals(t)
	delete(before, "shop/deployment-frontend-egress")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: generation %d -> %d", k, v, after[k])
		}
	}
	if _, ok := after["shop/deployment-frontend-egress"]; ok {
		t.Error("a proposal came back for a workload and direction that a policy governs")
	}
}

// TestProposalsGoWithTheirWorkload: deleting a workload deletes its proposals,
// through the owner reference and the garbage collector.
func TestProposalsGoWithTheirWorkload(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	learnFixtures(t)
	restoreDeployment(t, "shop", "cart")
	var d appsv1.Deployment
	must(t, env.Client.Get(ctx, key("shop", "cart"), &d))
	_, before := proposals(t)
	for _, name := range []string{"shop/deployment-cart-ingress", "shop/deployment-cart-egress"} {
		if _, ok := before[name]; !ok {
			t.Fatalf("%s missing before the workload is deleted", name)
		}
	}
	must(t, env.Client.Delete(ctx, &d, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	waitUntil(t, "the proposals of the deleted Deployment to go", time.Minute, func() bool {
		_, now := proposals(t)
		_, in := now["shop/deployment-cart-ingress"]
		_, eg := now["shop/deployment-cart-egress"]
		return !in && !eg
	})
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
