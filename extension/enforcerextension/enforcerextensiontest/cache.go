package enforcerextensiontest

import (
	"context"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The fake's shared cache: what a test sets, and what the flow path and the
// review page read.

// AddWorkload makes w known, with pods at ips.
func (e *Enforcer) AddWorkload(w workload.Ref, info WorkloadInfo, ips ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.workloads[w] = info
	for _, ip := range ips {
		e.byIP[ip] = w
	}
}

// PlaceOn runs workloads ws on node, for WorkloadsOn.
func (e *Enforcer) PlaceOn(node string, ws ...workload.Ref) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nodes == nil {
		e.nodes = map[string][]workload.Ref{}
	}
	e.nodes[node] = append(e.nodes[node], ws...)
}

// WorkloadsOn returns the workloads placed on node, or on any node for "",
// each once, in the order placed.
func (e *Enforcer) WorkloadsOn(node string) []workload.Ref {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []workload.Ref
	for _, n := range slices.Sorted(maps.Keys(e.nodes)) {
		if node != "" && n != node {
			continue
		}
		for _, w := range e.nodes[n] {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// Unresolved makes ip resolve to nothing, for reason.
func (e *Enforcer) Unresolved(ip string, reason workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons[ip] = reason
}

// SetPolicy adds or replaces a policy.
func (e *Enforcer) SetPolicy(p *v1alpha1.WorkloadNetworkPolicy) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.policies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.DeepCopy()
}

// PolicyNow returns the policy as the writers left it.
func (e *Enforcer) PolicyNow(key types.NamespacedName) *v1alpha1.WorkloadNetworkPolicy {
	p, _ := e.Policy(key)
	return p
}

// Proposals returns the proposals that the proposal writer wrote.
func (e *Enforcer) Proposals() []*v1alpha1.WorkloadNetworkPolicyProposal {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*v1alpha1.WorkloadNetworkPolicyProposal, 0, len(e.proposals))
	for _, k := range slices.SortedFunc(maps.Keys(e.proposals), func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	}) {
		out = append(out, e.proposals[k].DeepCopy())
	}
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ResolveIP resolves what AddWorkload and Unresolved said, whatever the
// time.
func (e *Enforcer) ResolveIP(ip string, _ time.Time) (workload.Ref, workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.reasons[ip]; ok {
		return workload.Ref{}, r
	}
	if w, ok := e.byIP[ip]; ok {
		return w, ""
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

// ResolvePod resolves the pods that AddPod named.
func (e *Enforcer) ResolvePod(namespace, name string) (workload.Ref, workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.podReasons[namespace+"/"+name]; ok {
		return workload.Ref{}, r
	}
	if w, ok := e.byPod[namespace+"/"+name]; ok {
		return w, ""
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

// UnresolvedPod makes the pod namespace/name resolve to nothing, for reason.
func (e *Enforcer) UnresolvedPod(namespace, name string, reason workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.podReasons == nil {
		e.podReasons = map[string]workload.Unresolved{}
	}
	e.podReasons[namespace+"/"+name] = reason
}

// AddPod names a pod of w, which must be known (AddWorkload).
func (e *Enforcer) AddPod(w workload.Ref, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byPod == nil {
		e.byPod = map[string]workload.Ref{}
	}
	e.byPod[w.Namespace+"/"+name] = w
}

// SetPodRevision makes the pod namespace/name have run rev (PodRevision),
// and rev known by its name (Revision).
func (e *Enforcer) SetPodRevision(namespace, name string, rev workload.Revision) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.podRevisions == nil {
		e.podRevisions = map[string]workload.Revision{}
	}
	e.podRevisions[namespace+"/"+name] = cloneRevision(rev)
	e.setRevision(rev)
}

// SetIPRevision makes the pod at ip have run rev, whatever the time
// (IPRevision), and rev known by its name (Revision).
func (e *Enforcer) SetIPRevision(ip string, rev workload.Revision) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ipRevisions == nil {
		e.ipRevisions = map[string]workload.Revision{}
	}
	e.ipRevisions[ip] = cloneRevision(rev)
	e.setRevision(rev)
}

// setRevision makes rev known by its name; called with the lock held.
func (e *Enforcer) setRevision(rev workload.Revision) {
	if e.revisions == nil {
		e.revisions = map[string]workload.Revision{}
	}
	e.revisions[rev.Workload.Namespace+"/"+rev.Name] = cloneRevision(rev)
}

// PodRevision returns what SetPodRevision set for the pod.
func (e *Enforcer) PodRevision(namespace, name string) (workload.Revision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rev, ok := e.podRevisions[namespace+"/"+name]
	return cloneRevision(rev), ok
}

// IPRevision returns what SetIPRevision set for ip, whatever the time.
func (e *Enforcer) IPRevision(ip string, _ time.Time) (workload.Revision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rev, ok := e.ipRevisions[ip]
	return cloneRevision(rev), ok
}

// Revision returns the revision of that name in namespace that
// SetPodRevision or SetIPRevision set.
func (e *Enforcer) Revision(namespace, name string) (workload.Revision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rev, ok := e.revisions[namespace+"/"+name]
	return cloneRevision(rev), ok
}

// cloneRevision copies rev's images, which the caller may change.
func cloneRevision(rev workload.Revision) workload.Revision {
	rev.Images = slices.Clone(rev.Images)
	return rev
}

// ResolveWorkload returns w when AddWorkload made it known.
func (e *Enforcer) ResolveWorkload(w workload.Ref) (workload.Ref, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.workloads[w]; !ok {
		return workload.Ref{}, false
	}
	return w, true
}

// HasPolicy reports whether a set policy targets w in direction d.
func (e *Enforcer) HasPolicy(w workload.Ref, d v1alpha1.Direction) bool {
	return len(e.Policies(w, d)) > 0
}

// Selector returns the workload's selector.
func (e *Enforcer) Selector(_ context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info, ok := e.workloads[w]
	if !ok || info.Selector == nil {
		return nil, "", false
	}
	return info.Selector.DeepCopy(), info.UID, true
}

// Labels returns the workload's pod and namespace labels.
func (e *Enforcer) Labels(w workload.Ref) (map[string]string, map[string]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info, ok := e.workloads[w]
	return info.PodLabels, info.NamespaceLabels, ok
}

// Policies returns the set policies that target w in direction d.
func (e *Enforcer) Policies(w workload.Ref, d v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []v1alpha1.WorkloadNetworkPolicy
	for _, p := range e.policies {
		if workload.Target(p.Namespace, p.Spec.TargetRef) == w && p.Spec.Direction == d {
			out = append(out, *p.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.WorkloadNetworkPolicy) int { return compare(a.Name, b.Name) })
	return out
}

// Policy returns a copy of a set policy.
func (e *Enforcer) Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.policies[key]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Proposal returns a copy of a proposal that the writer wrote, or false.
func (e *Enforcer) Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.proposals[key]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// RenderProposal renders proposal promoted in mode as the real extension
// does, by render.RenderProposal; the fake has no cluster, so a
// proposal whose backend renders entities as their addresses is an error.
func (e *Enforcer) RenderProposal(proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) (render.Native, error) {
	return render.RenderProposal(context.Background(), nil, proposal, mode)
}

// SetProposal adds or replaces a proposal, as if the writer had written it.
func (e *Enforcer) SetProposal(p *v1alpha1.WorkloadNetworkPolicyProposal) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proposals[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.DeepCopy()
}

// ListProposals returns copies of the proposals in namespace ("" for all),
// sorted by namespace and name.
func (e *Enforcer) ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error) {
	var out []v1alpha1.WorkloadNetworkPolicyProposal
	for _, p := range e.Proposals() {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, *p)
		}
	}
	return out, nil
}

// ListPolicies returns copies of the policies in namespace ("" for all),
// sorted by namespace and name.
func (e *Enforcer) ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []v1alpha1.WorkloadNetworkPolicy
	for _, p := range e.policies {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, *p.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.WorkloadNetworkPolicy) int {
		if c := compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return compare(a.Name, b.Name)
	})
	return out, nil
}
