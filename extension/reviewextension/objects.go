package reviewextension

import (
	"fmt"
	"net/http"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/render"
)

// objectData is what the proposal and policy views share.
type objectData struct {
	Kind       string // "proposal" or "policy"
	Namespace  string
	Name       string
	Spec       v1alpha1.PolicySpec
	Rules      string // the backend's spec as YAML, as kubectl shows it
	Conditions []metav1.Condition
	Traffic    v1alpha1.ObservedTraffic
	WouldBlock []v1alpha1.ObservedEdge
	Commands   []command
}

// command is a kubectl command that the view offers to copy: the page writes
// nothing itself.
type command struct {
	What, Line string
}

type proposalData struct {
	objectData
	// Native is the native object of each mode that the proposal may be
	// promoted in.
	Native []nativeView
	// Ready is the proposal's Ready condition, nil until the writer set it;
	// Gaps are what learning may have missed (the Coverage condition's).
	Ready *metav1.Condition
	Gaps  []v1alpha1.CoverageGap
	// Amendment is what the proposal changes in the policy it amends; nil
	// for a first proposal.
	Amendment *amendmentView
}

// nativeView is the native object that the render controller would create
// for a proposal promoted in Mode, as the render subcommand prints it: YAML,
// or why there is none (Message), or why it could not be rendered (Err).
type nativeView struct {
	Mode    v1alpha1.PolicyMode
	Kind    string
	YAML    string
	Message string
	Err     string
	// Command prints the same from the command line.
	Command string
}

// newNativeView renders proposal o promoted in mode, by the render
// controller's code (through the enforcer extension, which has the cluster's
// addresses in its cache): an amendment as the policy that it amends, with
// its spec.
func newNativeView(r policycontrollerextension.Renderer, o *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) nativeView {
	v := nativeView{Mode: mode, Command: renderCommand(o.Namespace, o.Name, mode)}
	var n render.Native
	var err error
	if render.AmendedPolicyName(o) != "" {
		n, err = policyRenderer(r)(render.AmendmentPolicy(o, mode))
	} else {
		n, err = r.RenderProposal(o, mode)
	}
	if err == nil {
		var b []byte
		b, err = n.YAML()
		v.Kind, v.YAML, v.Message = n.Kind, string(b), n.Message
	}
	if err != nil {
		v.Err = err.Error()
	}
	return v
}

type policyData struct {
	objectData
	Mode         v1alpha1.PolicyMode
	Status       v1alpha1.WorkloadNetworkPolicyStatus
	UnusedRules  map[string]bool
	Acknowledges map[string]string // violation id to its command
	// Amendments are the policy's amendments: what each changes in it.
	Amendments []amendmentView
}

func newObjectData(kind, namespace, name string, spec v1alpha1.PolicySpec, conds []metav1.Condition, t v1alpha1.ObservedTraffic) objectData {
	d := objectData{Kind: kind, Namespace: namespace, Name: name, Spec: spec, Conditions: conds, Traffic: t}
	if b, err := yaml.Marshal(rulesOf(&spec)); err == nil {
		d.Rules = string(b)
	} else {
		d.Rules = err.Error()
	}
	for _, e := range t.Observed {
		if e.Verdict == v1alpha1.VerdictWouldBlock {
			d.WouldBlock = append(d.WouldBlock, e)
		}
	}
	return d
}

// specRules is every rule of a spec, under the spec's own field names, as
// kubectl shows them: the backend's (kubernetes or istio) and the peers
// beyond the workloads (outside). A reviewer sees all that the object allows.
type specRules struct {
	Kubernetes any                    `json:"kubernetes,omitempty"`
	Istio      any                    `json:"istio,omitempty"`
	Outside    []v1alpha1.OutsidePeer `json:"outside,omitempty"`
}

func rulesOf(spec *v1alpha1.PolicySpec) specRules {
	r := specRules{Outside: spec.Outside}
	if spec.Backend == v1alpha1.BackendIstio {
		r.Istio = spec.Istio
	} else {
		r.Kubernetes = spec.Kubernetes
	}
	return r
}

func (p *pages) proposal(w http.ResponseWriter, r *http.Request) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	o, ok := p.cache.Proposal(key)
	if !ok {
		http.Error(w, fmt.Sprintf("no proposal %s (promoted, or not learned yet?)", key), http.StatusNotFound)
		return
	}
	d := proposalData{objectData: newObjectData("proposal", o.Namespace, o.Name, o.Spec, o.Status.Conditions, o.Status.ObservedTraffic),
		Ready: readyOf(o.Status.Conditions), Gaps: o.Status.CoverageGaps, Amendment: p.amendmentOf(o)}
	for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
		what := "Promote to a policy in " + string(mode) + " mode"
		if d.Amendment != nil {
			what = "Promote into policy " + d.Amendment.Policy + " in " + string(mode) + " mode (its spec becomes the amendment's)"
		}
		d.Commands = append(d.Commands, command{What: what, Line: promoteCommand(o.Namespace, o.Name, mode)})
		d.Native = append(d.Native, newNativeView(p.renderer, o, mode))
	}
	if d.Amendment != nil && d.Amendment.Command != "" {
		d.Commands = append(d.Commands, command{What: "Print what the amendment changes, for a review in Git", Line: d.Amendment.Command})
	}
	p.respond(w, http.StatusOK, "proposal.html", d)
}

func (p *pages) policy(w http.ResponseWriter, r *http.Request) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	o, ok := p.cache.Policy(key)
	if !ok {
		http.Error(w, fmt.Sprintf("no policy %s", key), http.StatusNotFound)
		return
	}
	d := policyData{
		objectData: newObjectData("policy", o.Namespace, o.Name, o.Spec.PolicySpec, o.Status.Conditions, o.Status.ObservedTraffic),
		Mode:       o.Spec.Mode, Status: o.Status, UnusedRules: map[string]bool{}, Acknowledges: map[string]string{},
	}
	for _, rule := range unusedRules(o) {
		d.UnusedRules[rule] = true
	}
	amendments, err := p.amendmentsOf(o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	d.Amendments = amendments
	other := v1alpha1.PolicyModeProtect
	if o.Spec.Mode == v1alpha1.PolicyModeProtect {
		other = v1alpha1.PolicyModeMonitor
	}
	d.Commands = append(d.Commands, command{What: "Switch to " + string(other) + " mode", Line: modeCommand(o.Namespace, o.Name, other)})
	for _, v := range o.Status.Violations {
		d.Acknowledges[v.ID] = acknowledgeCommand(o.Namespace, o.Name, v.ID)
	}
	if len(o.Status.Violations) > 0 {
		d.Commands = append(d.Commands, command{What: "Acknowledge violation " + o.Status.Violations[0].ID,
			Line: acknowledgeCommand(o.Namespace, o.Name, o.Status.Violations[0].ID)})
	}
	p.respond(w, http.StatusOK, "policy.html", d)
}

// promoteCommand sets the promote label on a proposal.
func promoteCommand(namespace, name string, mode v1alpha1.PolicyMode) string {
	return fmt.Sprintf("kubectl label wnpp -n %s %s %s=%s", namespace, name, v1alpha1.PromoteLabel, mode)
}

// renderCommand prints the native object of a proposal promoted in mode, for
// a review in Git before the promotion.
func renderCommand(namespace, name string, mode v1alpha1.PolicyMode) string {
	return fmt.Sprintf("kubectl get wnpp -n %s %s -o yaml | network-enforcer render --mode %s", namespace, name, mode)
}

// modeCommand switches a policy's mode.
func modeCommand(namespace, name string, mode v1alpha1.PolicyMode) string {
	return fmt.Sprintf(`kubectl patch wnp -n %s %s --type merge -p '{"spec":{"mode":%q}}'`, namespace, name, mode)
}

// acknowledgeCommand acknowledges a violation record; the reason is the
// person's to write.
func acknowledgeCommand(namespace, name, id string) string {
	return fmt.Sprintf("kubectl annotate wnp -n %s %s %s='<reason>'", namespace, name, v1alpha1.AcknowledgeAnnotation(id))
}

// endpointText says who a violation's end is.
func endpointText(e v1alpha1.ViolationEndpoint) string {
	s := strings.Trim(e.Namespace+"/"+workloadLabel(e.Kind, e.Name), "/")
	if e.Identity != "" {
		s = strings.TrimSpace(s + " " + e.Identity)
	}
	if s == "" {
		return "outside the workloads"
	}
	return s
}

// readyOf is the Ready condition among conds, nil when the writer has not
// set it yet.
func readyOf(conds []metav1.Condition) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, v1alpha1.ConditionReady)
}
