package reviewextension

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/render"
)

// amendmentView is what an amendment changes in its policy, as `network-enforcer
// render --diff` prints it (render.AmendmentDiff): the diff of the native
// object, and each added edge with the revisions that made it, learned
// revisions first, for review.
type amendmentView struct {
	Namespace, Name, Policy string
	// Diff is the amendment's diff; nil when it could not be made (Err).
	Diff *render.AmendmentDiff
	// Lines are Diff's text, a line each, with the class that colours it.
	Lines []diffLine
	// Fallback says why the diff is of protect mode rather than the
	// policy's: its mode renders no object.
	Fallback string
	Err      string
	// Command prints the same from the command line.
	Command string
}

// diffLine is a line of a diff: Class is "add", "del", "hunk", "head",
// "comment" or "" (context).
type diffLine struct {
	Class, Text string
}

// newAmendmentView diffs amendment against policy in the policy's mode, or in
// protect mode when the policy's renders no object (monitor on backends
// kubernetes and cilium), by the render controller's code with the cluster's
// addresses from the cache.
func newAmendmentView(r policycontrollerextension.Renderer, policy *v1alpha1.WorkloadNetworkPolicy, amendment *v1alpha1.WorkloadNetworkPolicyProposal) amendmentView {
	v := amendmentView{Namespace: amendment.Namespace, Name: amendment.Name, Policy: render.AmendedPolicyName(amendment)}
	if policy == nil {
		v.Err = fmt.Sprintf("the policy %s/%s that it amends is not in the cache (deleted?)", v.Namespace, v.Policy)
		return v
	}
	d, err := render.NewAmendmentDiff(policy, amendment, "", policyRenderer(r))
	mode := v1alpha1.PolicyMode("")
	if err == nil && d.None != "" && d.Mode != v1alpha1.PolicyModeProtect {
		v.Fallback = fmt.Sprintf("%s: this is the %s that protect mode creates.", d.None, d.Kind)
		mode = v1alpha1.PolicyModeProtect
		d, err = render.NewAmendmentDiff(policy, amendment, mode, policyRenderer(r))
	}
	v.Command = diffCommand(policy.Namespace, policy.Name, amendment.Name, mode)
	if err != nil {
		v.Err = err.Error()
		return v
	}
	v.Diff = d
	for _, l := range strings.SplitAfter(d.Text(), "\n") {
		if l == "" {
			continue
		}
		v.Lines = append(v.Lines, diffLine{Class: diffLineClass(l), Text: l})
	}
	return v
}

// diffLineClass is the class of a line of a unified diff followed by comments.
func diffLineClass(l string) string {
	switch {
	case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
		return "head"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	case strings.HasPrefix(l, "#"):
		return "comment"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	}
	return ""
}

// policyRenderer renders a policy by the policy controller's Renderer, which
// renders proposals: a proposal of the policy's namespace, name and spec,
// promoted in the policy's mode, is the policy but for its UID, which the
// native object's owner reference is given back. The object is then the one
// that render.RenderPolicy returns, as `network-enforcer render` prints it.
func policyRenderer(r policycontrollerextension.Renderer) render.PolicyRenderer {
	return func(p *v1alpha1.WorkloadNetworkPolicy) (render.Native, error) {
		n, err := r.RenderProposal(&v1alpha1.WorkloadNetworkPolicyProposal{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			Spec:       p.Spec.PolicySpec,
		}, p.Spec.Mode)
		if err != nil || n.Object == nil {
			return n, err
		}
		refs := n.Object.GetOwnerReferences()
		for i := range refs {
			if refs[i].Kind == "WorkloadNetworkPolicy" && refs[i].Name == p.Name {
				refs[i].UID = p.UID
			}
		}
		n.Object.SetOwnerReferences(refs)
		return n, nil
	}
}

// amendmentsOf returns the views of the amendments in the cache of policy p.
func (p *pages) amendmentsOf(policy *v1alpha1.WorkloadNetworkPolicy) ([]amendmentView, error) {
	proposals, err := p.cache.ListProposals(policy.Namespace)
	if err != nil {
		return nil, err
	}
	var out []amendmentView
	for i := range proposals {
		if render.AmendedPolicyName(&proposals[i]) == policy.Name {
			out = append(out, newAmendmentView(p.renderer, policy, &proposals[i]))
		}
	}
	return out, nil
}

// amendmentOf is the view of proposal o when it is an amendment; nil for a
// first proposal.
func (p *pages) amendmentOf(o *v1alpha1.WorkloadNetworkPolicyProposal) *amendmentView {
	name := render.AmendedPolicyName(o)
	if name == "" {
		return nil
	}
	policy, _ := p.cache.Policy(types.NamespacedName{Namespace: o.Namespace, Name: name})
	v := newAmendmentView(p.renderer, policy, o)
	return &v
}

// diffCommand prints an amendment's diff from the command line, in mode
// (the policy's when "").
func diffCommand(namespace, policy, amendment string, mode v1alpha1.PolicyMode) string {
	s := fmt.Sprintf("kubectl get -n %s wnp/%s wnpp/%s -o yaml | network-enforcer render --diff", namespace, policy, amendment)
	if mode != "" {
		s += " --mode " + string(mode)
	}
	return s
}

// learnedRevisionEdges is how many of an amendment's added edges a revision
// that learning saw made, as its status counts them; 0 for a first proposal.
func learnedRevisionEdges(o v1alpha1.WorkloadNetworkPolicyProposal) int32 {
	if o.Status.Amendment == nil {
		return 0
	}
	return o.Status.Amendment.LearnedRevisionEdges
}
