package k8swriterexporter

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// observedKey is the key, among a proposal's observed edges, of an
// observation (learning.Observation.Key); false for a protocol that no
// policy names.
func observedKey(o *learning.Observation) (observed.Key, bool) { return o.Key() }

// judge judges p's observed edges by its spec as it is now.
func (w *writer) judge(p *v1alpha1.WorkloadNetworkPolicyProposal) observed.Judge {
	return w.judgeSpec(&p.Spec, p.Namespace)
}

// judgeSpec judges the observed edges of a proposal in namespace by spec.
func (w *writer) judgeSpec(spec *v1alpha1.PolicySpec, namespace string) observed.Judge {
	return observed.JudgeSpec(w.enforcer, spec, namespace, w.enforcer.DataPlane())
}

// cached is proposal name as the cache holds it; false before the writer
// started or while there is none.
func (w *writer) cached(name types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool) {
	if w.enforcer == nil {
		return nil, false
	}
	return w.enforcer.Proposal(name)
}

// judgeCached judges the edges of proposal name by its spec in the cache:
// for those past the tracking limit that come before the proposal's first
// status write of this run. Nil when there is no proposal yet: nothing
// allows them.
func (w *writer) judgeCached(name types.NamespacedName) observed.Judge {
	p, ok := w.cached(name)
	if !ok {
		return nil
	}
	return w.judge(p)
}

// countedCached is, for proposal name, the batches that its status in the
// cache counts: a new leader's first look at a proposal, before it writes it.
func (w *writer) countedCached(name types.NamespacedName) []v1alpha1.CountedBatch {
	p, ok := w.cached(name)
	if !ok {
		return nil
	}
	return p.Status.CountedBatches
}
