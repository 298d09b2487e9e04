package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// What an amendment changes in the policy it amends, as the native object
// shows it: one code for `network-enforcer render --diff` and the review
// page, so that a reviewer reads the same lines in a pull request and on the
// page.

// AmendedPolicyName returns the name of the WorkloadNetworkPolicy, in the
// proposal's namespace, that proposal p amends; "" when p is a first
// proposal. It is status.amendment.policy; else the policy that owns p; else
// the amends label, which holds the policy's name unless the name was too
// long for a label value.
func AmendedPolicyName(p *v1alpha1.WorkloadNetworkPolicyProposal) string {
	if a := p.Status.Amendment; a != nil && a.Policy != "" {
		return a.Policy
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "WorkloadNetworkPolicy" && strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			return ref.Name
		}
	}
	return p.Labels[v1alpha1.AmendsLabel]
}

// AmendedPolicy returns policy as the promotion of amendment in mode makes it:
// the policy's metadata with the amendment's spec. mode "" keeps the
// policy's.
func AmendedPolicy(policy *v1alpha1.WorkloadNetworkPolicy, amendment *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	p := policy.DeepCopy()
	p.Spec.PolicySpec = *amendment.Spec.DeepCopy()
	if mode != "" {
		p.Spec.Mode = mode
	}
	return p
}

// AmendmentPolicy returns the policy as the promotion of amendment in mode
// makes it, as far as the amendment alone tells: the policy that it amends, by
// the name and UID of its owner, with the amendment's spec. Its native object
// is AmendedPolicy's: no native object carries a policy's labels or
// annotations.
func AmendmentPolicy(amendment *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	p := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: amendment.Namespace, Name: AmendedPolicyName(amendment)},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: *amendment.Spec.DeepCopy(), Mode: mode},
	}
	for _, ref := range amendment.OwnerReferences {
		if ref.Kind == "WorkloadNetworkPolicy" && ref.Name == p.Name {
			p.UID = ref.UID
		}
	}
	return p
}

// PolicyRenderer renders a policy as the render controller would
// (RenderPolicy with a reader of the cluster's addresses).
type PolicyRenderer func(p *v1alpha1.WorkloadNetworkPolicy) (Native, error)

// AmendmentDiff is what an amendment changes in its policy: the unified diff
// of the native object of the policy as it is and as the amendment would make
// it, both in one mode, and the edges added and the rules removed, each with
// what made it.
type AmendmentDiff struct {
	// Namespace, Policy and Amendment name the two objects.
	Namespace, Policy, Amendment string
	// Kind is the backend's native kind, such as "NetworkPolicy".
	Kind string
	// Mode is the mode that both sides are rendered in.
	Mode v1alpha1.PolicyMode
	// Revision is the policy's revision annotation; "" when it has none.
	Revision string
	// From and To are the names of the two sides, as the diff's --- and +++
	// lines give them.
	From, To string
	// Unified is the unified diff of the two objects' YAML; "" when they are
	// the same, or when the mode has no object (None).
	Unified string
	// None says why there is no object to diff in Mode (monitor mode on
	// backends kubernetes and cilium); "" when there is one.
	None string
	// Direction is the policy's direction, which the added edges go in.
	Direction v1alpha1.Direction
	// Added are the edges that the amendment's status lists, those made by
	// a revision that learning saw (LearnedRevision) first, each origin
	// oldest first.
	Added []AttributedEdge
	// Unlisted counts the added edges that the status counts and does not
	// list (past MaxAmendedEdges): the spec holds them all the same.
	Unlisted int32
	// Removed are the policy's rules that the amendment leaves out, unused.
	Removed []v1alpha1.RuleUse
	// NoStatus: the amendment came without status.amendment, so its edges
	// cannot be attributed.
	NoStatus bool
	// Stale says that the policy's spec changed since the amendment was
	// built on it, which promotion refuses; "" when it did not, or when the
	// generations are unknown.
	Stale string
}

// AttributedEdge is an edge that an amendment adds, in its policy's
// direction.
type AttributedEdge struct {
	v1alpha1.AmendedEdge
	Direction v1alpha1.Direction
}

// NewAmendmentDiff renders policy as it is and as amendment would make it,
// both in mode (the policy's own when ""), with renderPolicy, and diffs the
// two.
func NewAmendmentDiff(policy *v1alpha1.WorkloadNetworkPolicy, amendment *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode,
	renderPolicy PolicyRenderer,
) (*AmendmentDiff, error) {
	if mode == "" {
		mode = cmp.Or(policy.Spec.Mode, v1alpha1.PolicyModeMonitor)
	}
	current := policy.DeepCopy()
	current.Spec.Mode = mode
	before, err := renderPolicy(current)
	if err != nil {
		return nil, fmt.Errorf("WorkloadNetworkPolicy %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	after, err := renderPolicy(AmendedPolicy(policy, amendment, mode))
	if err != nil {
		return nil, fmt.Errorf("the policy as amendment %s makes it: %w", amendment.Name, err)
	}
	d := &AmendmentDiff{
		Namespace: policy.Namespace, Policy: policy.Name, Amendment: amendment.Name,
		Kind: before.Kind, Mode: mode, Revision: policy.Annotations[v1alpha1.RevisionAnnotation],
		Direction: policy.Spec.Direction,
	}
	revision := "current"
	if d.Revision != "" {
		revision = "revision " + d.Revision
	}
	d.From = fmt.Sprintf("%s %s/%s (%s)", d.Kind, d.Namespace, d.Policy, revision)
	d.To = fmt.Sprintf("%s %s/%s (amendment %s)", d.Kind, d.Namespace, d.Policy, d.Amendment)
	if before.Object == nil && after.Object == nil {
		d.None = before.Message
	} else {
		a, err := before.YAML()
		if err != nil {
			return nil, err
		}
		b, err := after.YAML()
		if err != nil {
			return nil, err
		}
		if d.Unified, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: lines(string(a)), B: lines(string(b)), FromFile: d.From, ToFile: d.To, Context: 3,
		}); err != nil {
			return nil, err
		}
	}
	if built, ok := amendment.Annotations[v1alpha1.AmendsGenerationAnnotation]; ok && policy.Generation != 0 {
		if g, err := strconv.ParseInt(built, 10, 64); err == nil && g != policy.Generation {
			d.Stale = fmt.Sprintf("the amendment was built on generation %d of the policy, which is at generation %d: "+
				"promotion does not merge it; the writer builds it again on the policy as it is", g, policy.Generation)
		}
	}
	a := amendment.Status.Amendment
	if a == nil {
		d.NoStatus = true
		return d, nil
	}
	for _, e := range a.Added {
		d.Added = append(d.Added, AttributedEdge{AmendedEdge: e, Direction: d.Direction})
	}
	// Learned revisions first: learning missed the edge, or a pod does what
	// it never did. Each origin keeps the status's order, oldest first.
	slices.SortStableFunc(d.Added, func(x, y AttributedEdge) int {
		return cmp.Compare(originRank(x.Origin), originRank(y.Origin))
	})
	if n := a.NewRevisionEdges + a.LearnedRevisionEdges - int32(len(a.Added)); n > 0 {
		d.Unlisted = n
	}
	d.Removed = slices.Clone(a.Removed)
	return d, nil
}

func originRank(o v1alpha1.EdgeOrigin) int {
	if o == v1alpha1.EdgeOriginLearnedRevision {
		return 0
	}
	return 1
}

// lines splits YAML into lines, each with its newline.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// LearnedRevisionEdges counts the added edges that a revision made which was
// live while the policy was learned: those a reviewer looks at first.
func (d *AmendmentDiff) LearnedRevisionEdges() int {
	n := 0
	for _, e := range d.Added {
		if e.ReviewFirst() {
			n++
		}
	}
	return n
}

// Text is the diff as `network-enforcer render --diff` prints it: the unified
// diff, then the comments (lines that start with #).
func (d *AmendmentDiff) Text() string {
	var b strings.Builder
	b.WriteString(d.Unified)
	for _, c := range d.Comments() {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	return b.String()
}

// Comments are what the diff does not show, each line a comment: which
// amendment of which policy in which mode, why there is no diff when there is
// none, a policy changed since, then each added edge ("# + ...") with its
// origin and revisions, learned revisions first, and each removed rule
// ("# - ...") with its last use.
func (d *AmendmentDiff) Comments() []string {
	out := []string{fmt.Sprintf("# amendment %s/%s of WorkloadNetworkPolicy %s/%s, in %s mode", d.Namespace, d.Amendment, d.Namespace, d.Policy, d.Mode)}
	if d.NoStatus {
		out = append(out, "# no status.amendment in the input: its edges are not attributed")
	} else {
		summary := "# " + plural(len(d.Added)+int(d.Unlisted), "edge") + " added"
		if n := d.LearnedRevisionEdges(); n > 0 {
			summary += fmt.Sprintf(" (%d %s: review first)", n, v1alpha1.EdgeOriginLearnedRevision)
		}
		out = append(out, summary+", "+plural(len(d.Removed), "rule")+" removed")
	}
	switch {
	case d.None != "":
		out = append(out, fmt.Sprintf("# no %s to diff: %s", d.Kind, d.None))
	case d.Unified == "":
		out = append(out, fmt.Sprintf("# the %s is the same either way: the amendment changes nothing that it renders", d.Kind))
	}
	if d.Stale != "" {
		out = append(out, "# "+d.Stale)
	}
	for _, e := range d.Added {
		out = append(out, "# + "+e.Line())
	}
	if d.Unlisted > 0 {
		out = append(out, fmt.Sprintf("# + and %s that the status does not list (the spec holds every one)", plural(int(d.Unlisted), "more edge")))
	}
	for _, r := range d.Removed {
		out = append(out, "# - "+RuleUseText(r))
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// ReviewFirst reports whether a revision that was live while the policy was
// learned made the edge.
func (e AttributedEdge) ReviewFirst() bool { return e.Origin == v1alpha1.EdgeOriginLearnedRevision }

// What is the edge: "egress TCP/8080 to shop/Deployment/cart".
func (e AttributedEdge) What() string {
	to := "to"
	if e.Direction == v1alpha1.DirectionIngress {
		to = "from"
	}
	return fmt.Sprintf("%s %s %s %s", strings.ToLower(string(e.Direction)), e.ProtocolPort(), to, PeerText(e.Peer))
}

// ProtocolPort is the edge's protocol and port: "TCP/8080", or "TCP" when
// the port is unknown.
func (e AttributedEdge) ProtocolPort() string {
	proto := cmp.Or(string(e.Protocol), "any protocol")
	if e.Port == 0 {
		return proto
	}
	return proto + "/" + strconv.Itoa(int(e.Port))
}

// OriginIsPeer reports whether the peer's revision, not the revision of the
// policy's workload, decided the edge's origin: on an ingress edge from a
// workload, which release brought a new client.
func (e AttributedEdge) OriginIsPeer() bool {
	return e.Direction == v1alpha1.DirectionIngress && e.Peer.Class == v1alpha1.PeerClassWorkload && e.PeerRevision != nil
}

// OriginRevision is the revision that decided the edge's origin: the peer's
// (OriginIsPeer) or the policy's workload's; nil when the status names none.
func (e AttributedEdge) OriginRevision() *v1alpha1.WorkloadRevision {
	if e.OriginIsPeer() {
		return e.PeerRevision
	}
	return e.TargetRevision
}

// OriginRevisionText is OriginRevision as RevisionText writes it, "peer "
// before the peer's; "" for none.
func (e AttributedEdge) OriginRevisionText() string {
	return e.revisionText(e.OriginIsPeer())
}

// OtherRevisionText is the other end's revision, as OriginRevisionText; ""
// for none.
func (e AttributedEdge) OtherRevisionText() string {
	return e.revisionText(!e.OriginIsPeer())
}

func (e AttributedEdge) revisionText(peer bool) string {
	switch {
	case peer && e.PeerRevision != nil:
		return "peer " + RevisionText(e.PeerRevision)
	case !peer && e.TargetRevision != nil:
		return RevisionText(e.TargetRevision)
	}
	return ""
}

// Line is the edge with its origin, the revisions that made it (the one that
// decided the origin first; the peer's named so) and its first flow:
// "egress TCP/8080 to shop/Deployment/cart  NewRevision  web-7d9f8 (image
// web:2.0, created 2026-05-04T09:00:00Z)  peer cart-5b6c7 (...)  first seen
// 2026-05-04T10:00:00Z".
func (e AttributedEdge) Line() string {
	parts := []string{e.What(), string(e.Origin)}
	for _, r := range []string{e.OriginRevisionText(), e.OtherRevisionText()} {
		if r != "" {
			parts = append(parts, r)
		}
	}
	if !e.FirstSeen.IsZero() {
		parts = append(parts, "first seen "+timeText(e.FirstSeen.Time))
	}
	return strings.Join(parts, "  ")
}

// PeerText names a peer: a workload as namespace/Kind/name, any other peer
// by its class and address, name or identity.
func PeerText(p v1alpha1.ObservedPeer) string {
	s := p.String()
	if p.Class == v1alpha1.PeerClassWorkload {
		return strings.TrimPrefix(s, string(p.Class)+" ")
	}
	return s
}

// RevisionText is a workload revision: "web-7d9f8 (image web:2.0, created
// 2026-05-04T09:00:00Z)".
func RevisionText(r *v1alpha1.WorkloadRevision) string {
	var about []string
	switch len(r.Images) {
	case 0:
	case 1:
		about = append(about, "image "+r.Images[0])
	default:
		about = append(about, "images "+strings.Join(r.Images, ", "))
	}
	if r.Created != nil && !r.Created.IsZero() {
		about = append(about, "created "+timeText(r.Created.Time))
	}
	name := cmp.Or(r.Name, "a revision without a name")
	if len(about) == 0 {
		return name
	}
	return name + " (" + strings.Join(about, ", ") + ")"
}

// RuleUseText is a removed rule with its last use: "egress[1]  last used
// 2026-03-01T00:00:00Z (120 flows)", or "egress[2]  never used".
func RuleUseText(r v1alpha1.RuleUse) string {
	if r.LastUsed == nil || r.LastUsed.IsZero() {
		return r.Rule + "  never used"
	}
	return fmt.Sprintf("%s  last used %s (%s)", r.Rule, timeText(r.LastUsed.Time), plural(int(r.Flows), "flow"))
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }
