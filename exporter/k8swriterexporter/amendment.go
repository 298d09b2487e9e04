package k8swriterexporter

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// A policy's amendment is a proposal that the writer learns after promotion,
// from the edges that the policy does not allow and its workload made
// (learning.Amendment, from the violation processor). Its spec is the
// policy's spec as the amendment would leave it: the policy's rules, without
// those that went unused (the policy's status marks them), with the learned
// edges added. Promoting it makes that the policy's spec. It is owned by the
// policy, and names the policy's generation that it was built on: a policy
// changed since (an edit, a rollback, another amendment) is never
// overwritten by it; the writer builds it again on the policy as it is.

// errPolicyGone: the amended policy is gone; the amendment goes with it (it
// is the policy's to garbage-collect).
var errPolicyGone = errWorkloadGone

// reconcileAmendment brings the amendment of key.amends up to what was
// learned.
func (w *writer) reconcileAmendment(ctx context.Context, key proposalKey, l *learned, pw termwriter.ProposalWriter) error {
	pol, ok := w.enforcer.Policy(types.NamespacedName{Namespace: key.workload.Namespace, Name: key.amends})
	if !ok || workload.Target(pol.Namespace, pol.Spec.TargetRef) != key.workload || pol.Spec.Direction != key.direction {
		return errPolicyGone
	}
	all, origins := w.agg.amendmentOf(key)
	unused := map[string]bool{}
	var removed []v1alpha1.RuleUse
	for _, r := range pol.Status.RuleUse {
		if r.Unused {
			unused[r.Rule] = true
			removed = append(removed, r)
		}
	}
	base := netpolmatch.WithoutRules(&pol.Spec.PolicySpec, unused)
	generation := strconv.FormatInt(pol.Generation, 10)
	nn := nameOf(key)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var existing v1alpha1.WorkloadNetworkPolicyProposal
		err := pw.Get(ctx, nn, &existing)
		found := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if found && (!managed(&existing) || !ownedBy(&existing, pol.UID)) {
			return nil // not the writer's to change
		}
		amendment := w.amendmentStatus(pol, all, origins, removed, existing.Status.Amendment)
		if len(amendment.Added) == 0 && !found {
			return nil // the policy allows everything learned: nothing to amend
		}
		held, peers := rulesOf(&base), all
		if found && existing.Annotations[v1alpha1.AmendsGenerationAnnotation] == generation {
			// Built on the policy as it is: a person's edit of the
			// amendment stands, and only what is new is added.
			held, peers = rulesOf(&existing.Spec), l.peers
		}
		rs, b := bounded(pol.Spec.Backend, held, w.learnedRules(ctx, peers), w.cfg.MaxPeers, w.cfg.MaxPortsPerPeer)
		spec := specOf(pol.Spec.Backend, pol.Spec.TargetRef, pol.Spec.Direction, selectorOf(&pol.Spec.PolicySpec), rs)
		bc := boundedCondition(b, pol.Spec.Backend, w.cfg.MaxPeers, w.cfg.MaxPortsPerPeer)
		want := amendmentMeta(pol, generation)
		if !found {
			p := &v1alpha1.WorkloadNetworkPolicyProposal{ObjectMeta: want, Spec: spec}
			p.Namespace, p.Name = nn.Namespace, nn.Name
			if w.agg.wasRefused(key, &p.Spec, "") {
				return nil
			}
			if err := w.write(ctx, pw, p, func() error { return pw.Create(ctx, p) }, "create"); err != nil {
				return w.refused(key, p.Spec, nil, nil, err)
			}
			w.agg.refuse(key, nil)
			return w.writeAmendmentStatus(ctx, pw, p, w.newEdge(p, &pol.Spec.PolicySpec, all), amendment, bc, writtenCondition(nil))
		}
		if apiequality.Semantic.DeepEqual(spec, existing.Spec) && existing.Annotations[v1alpha1.AmendsGenerationAnnotation] == generation {
			return w.writeAmendmentStatus(ctx, pw, &existing, nil, amendment, bc, writtenCondition(nil))
		}
		if w.agg.wasRefused(key, &spec, existing.ResourceVersion) {
			return nil
		}
		before := existing.DeepCopy()
		rebuilt := existing.Annotations[v1alpha1.AmendsGenerationAnnotation] != generation
		existing.Spec = spec
		existing.Labels, existing.Annotations = mergeStrings(existing.Labels, want.Labels), mergeStrings(existing.Annotations, want.Annotations)
		if rebuilt {
			// A person's promote label was for the amendment as it was:
			// rebuilt on the policy as it is now, it waits for a new one.
			delete(existing.Labels, v1alpha1.PromoteLabel)
		}
		if err := w.write(ctx, pw, &existing, func() error { return pw.Update(ctx, &existing) }, "update"); err != nil {
			return w.refused(key, spec, before, func() error {
				return w.writeAmendmentStatus(ctx, pw, before, nil, nil, writtenCondition(err))
			}, err)
		}
		w.agg.refuse(key, nil)
		return w.writeAmendmentStatus(ctx, pw, &existing, w.newEdge(&existing, &before.Spec, peers), amendment, bc, writtenCondition(nil))
	})
}

// amendmentMeta is the metadata that the writer keeps on policy pol's
// amendment: its labels, the generation it is built on, its owner.
func amendmentMeta(pol *v1alpha1.WorkloadNetworkPolicy, generation string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Labels:      map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedBy, v1alpha1.AmendsLabel: amendsValue(pol.Name)},
		Annotations: map[string]string{v1alpha1.AmendsGenerationAnnotation: generation},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkloadNetworkPolicy",
			Name: pol.Name, UID: pol.UID, Controller: ptr.To(true)}},
	}
}

// mergeStrings is have with want's entries set.
func mergeStrings(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// selectorOf is the pod selector of a spec, as specOf takes it.
func selectorOf(spec *v1alpha1.PolicySpec) *metav1.LabelSelector {
	if spec.Istio != nil {
		return &metav1.LabelSelector{MatchLabels: spec.Istio.Selector.MatchLabels}
	}
	if spec.Kubernetes != nil {
		return spec.Kubernetes.PodSelector.DeepCopy()
	}
	return &metav1.LabelSelector{}
}

// amendmentStatus is what the amendment of pol adds and removes: each learned
// edge that pol does not allow, with its first flow and the revisions that
// made it (held: the status written before, which a new leader does not
// have in memory), and pol's unused rules.
func (w *writer) amendmentStatus(pol *v1alpha1.WorkloadNetworkPolicy, all edgeSet, origins map[edgeRef]origin,
	removed []v1alpha1.RuleUse, held *v1alpha1.AmendmentStatus) *v1alpha1.AmendmentStatus {
	since := v1alpha1.PromotedAt(pol)
	st := &v1alpha1.AmendmentStatus{Policy: pol.Name, Since: metav1.NewTime(since.UTC()), Removed: removed}
	allows := w.inPolicy(&pol.Spec.PolicySpec, pol.Namespace)
	seen := map[string]bool{}
	for peer, ports := range all {
		for port := range ports {
			k, ok := learnedKey(peer, port)
			if !ok {
				continue
			}
			if allows(&k) {
				continue
			}
			e := v1alpha1.AmendedEdge{Peer: k.Peer(), Protocol: k.Protocol, Port: k.Port}
			o := origins[edgeRef{peer, port}]
			e.FirstSeen = metav1.NewTime(o.first.UTC().Truncate(time.Second))
			e.TargetRevision = w.revision(pol.Namespace, o.targetRevision)
			if peer.workload.Namespace != "" {
				e.PeerRevision = w.revision(peer.workload.Namespace, o.peerRevision)
			}
			e.Origin = originOf(&e, pol.Spec.Direction, since)
			seen[edgeID(&e)] = true
			st.Added = append(st.Added, e)
		}
	}
	if held != nil {
		// What an earlier leader learned, which this one has not seen yet.
		for _, e := range held.Added {
			k := observed.KeyOf(&v1alpha1.ObservedEdge{Peer: e.Peer, Protocol: e.Protocol, Port: e.Port})
			if !allows(&k) && !seen[edgeID(&e)] {
				st.Added = append(st.Added, e)
			}
		}
	}
	slices.SortFunc(st.Added, func(a, b v1alpha1.AmendedEdge) int {
		return cmp.Or(a.FirstSeen.Compare(b.FirstSeen.Time), cmp.Compare(edgeID(&a), edgeID(&b)))
	})
	for _, e := range st.Added {
		if e.Origin == v1alpha1.EdgeOriginNewRevision {
			st.NewRevisionEdges++
		} else {
			st.LearnedRevisionEdges++
		}
	}
	st.Added = st.Added[:min(len(st.Added), v1alpha1.MaxAmendedEdges)]
	return st
}

// inPolicy reports whether spec, a policy's in namespace, has an edge
// already: it allows the edge as its data plane enforces it, or one of its
// rules names the edge, though the backend cannot render that rule in a
// form that the data plane enforces (a DNS name in a NetworkPolicy; on
// Cilium, the API server or a node by an ipBlock). The data plane refuses
// such an edge, each connection a violation, but an amendment changes
// nothing for it: its WouldBlock condition, and the policy's, say why it is
// blocked. Were it amended, promoting the amendment would bring it back at
// once, an amendment of nothing.
func (w *writer) inPolicy(spec *v1alpha1.PolicySpec, namespace string) func(*observed.Key) bool {
	allows := w.judgeSpec(spec, namespace)
	written := spec
	if spec.Backend == v1alpha1.BackendKubernetes {
		// The rules as written: backend cilium renders every peer of
		// spec.outside (netpolmatch.Rendered), and no data plane leaves
		// out an address block.
		written = spec.DeepCopy()
		written.Backend = v1alpha1.BackendCilium
	}
	names := observed.JudgeSpec(w.enforcer, written, namespace, "")
	return func(k *observed.Key) bool {
		if _, ok := allows(k); ok {
			return true
		}
		_, ok := names(k)
		return ok
	}
}

// originOf is an amended edge's origin: NewRevision when the revision that
// says which release made it (the client's, for an ingress edge from a
// workload; else the workload's own) appeared after the policy's last
// promotion or amendment (since). A revision that is not known is counted
// as learned: the reviewer looks at it first.
func originOf(e *v1alpha1.AmendedEdge, d v1alpha1.Direction, since time.Time) v1alpha1.EdgeOrigin {
	r := e.TargetRevision
	if d == v1alpha1.DirectionIngress && e.PeerRevision != nil {
		r = e.PeerRevision
	}
	if r != nil && r.Created != nil && r.Created.After(since) {
		return v1alpha1.EdgeOriginNewRevision
	}
	return v1alpha1.EdgeOriginLearnedRevision
}

// revision is the revision of that name in namespace as the status names
// it; nil for none.
func (w *writer) revision(namespace, name string) *v1alpha1.WorkloadRevision {
	if name == "" {
		return nil
	}
	out := &v1alpha1.WorkloadRevision{Name: name}
	r, ok := w.enforcer.Revision(namespace, name)
	if !ok {
		return out // gone from the cache: its name is still what made the edge
	}
	out.Hash, out.Images = r.Hash, r.Images
	if !r.Created.IsZero() {
		out.Created = &metav1.Time{Time: r.Created.UTC()}
	}
	return out
}

// edgeID is an amended edge's identity: its peer, protocol and port.
func edgeID(e *v1alpha1.AmendedEdge) string {
	return e.Peer.String() + " " + string(e.Protocol) + "/" + strconv.Itoa(int(e.Port))
}

// writeAmendmentStatus writes an amendment's status as writeStatus writes a
// proposal's, with what it adds and removes (amendment; nil keeps what the
// status says) and its Revisions condition.
func (w *writer) writeAmendmentStatus(ctx context.Context, pw termwriter.ProposalWriter, p *v1alpha1.WorkloadNetworkPolicyProposal,
	learned *v1alpha1.NewEdge, amendment *v1alpha1.AmendmentStatus, conditions ...metav1.Condition) error {
	if amendment != nil {
		p = p.DeepCopy()
		held := p.Status.Amendment
		p.Status.Amendment = amendment
		conditions = append(conditions, revisionsCondition(p.Generation, amendment))
		err := w.writeStatus(ctx, pw, p, learned, conditions...)
		if err != nil {
			p.Status.Amendment = held
		}
		return err
	}
	return w.writeStatus(ctx, pw, p, learned, conditions...)
}

// revisionsCondition is an amendment's Revisions condition: False while a
// revision that was live while the policy was learned made one of its
// edges, which a reviewer looks at first.
func revisionsCondition(generation int64, a *v1alpha1.AmendmentStatus) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionRevisions, ObservedGeneration: generation,
		Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNewRevisionsOnly,
		Message: "every added edge was first made by a revision that appeared after the policy's last promotion or amendment (" +
			a.Since.UTC().Format(time.RFC3339) + ")"}
	var learned []string
	for i := range a.Added {
		if a.Added[i].Origin == v1alpha1.EdgeOriginLearnedRevision {
			learned = append(learned, edgeID(&a.Added[i]))
		}
	}
	if len(learned) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonLearnedRevision
		c.Message = truncate(strconv.Itoa(len(learned))+" added "+plural(len(learned), "edge was", "edges were")+
			" made by a revision that was live while the policy was learned: learning missed a rare path, or a pod does what it never did; review "+
			strings.Join(learned, ", "), maxConditionMessage)
	}
	return c
}
