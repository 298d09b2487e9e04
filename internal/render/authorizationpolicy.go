package render

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"istio.io/api/annotation"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// dryRunAnnotation makes ztunnel evaluate an AuthorizationPolicy and log its
// decision without enforcing it.
var dryRunAnnotation = annotation.IoIstioDryRun.Name

// authorizationPolicies renders the istio backend: an ALLOW AuthorizationPolicy
// from spec.istio in both modes, with the dry-run annotation in monitor mode only,
// so that ztunnel reports the violations of a monitored policy as it would deny
// them. A mode change adds or removes the annotation on the same object.
type authorizationPolicies struct {
	// outside is what spec.outside's entities are rendered as: sources of
	// their addresses (outside_addresses.go); nil for a policy without.
	outside *outsideAddresses
}

var _ nativeKind[*securityv1.AuthorizationPolicy] = authorizationPolicies{}

func (authorizationPolicies) kind() string { return "AuthorizationPolicy" }

func (authorizationPolicies) empty() *securityv1.AuthorizationPolicy {
	return &securityv1.AuthorizationPolicy{}
}

func (authorizationPolicies) outcome(p *v1alpha1.WorkloadNetworkPolicy) (bool, string, string) {
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		return true, v1alpha1.ReasonMonitor, "monitor mode: dry-run AuthorizationPolicy: ztunnel logs, does not block"
	}
	return true, v1alpha1.ReasonProtect, "protect mode: the AuthorizationPolicy is rendered; ztunnel blocks what it does not allow"
}

func (a authorizationPolicies) desired(p *v1alpha1.WorkloadNetworkPolicy) (*securityv1.AuthorizationPolicy, error) {
	in := p.Spec.Istio
	if in == nil || len(in.Selector.MatchLabels) == 0 {
		// The CRD's validation refuses both. An empty selector would make the
		// policy apply to every pod in the namespace.
		return nil, errors.New("backend istio without spec.istio.selector.matchLabels")
	}
	ap := &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	ap.Spec.Action = securityv1beta1.AuthorizationPolicy_ALLOW
	// ztunnel ignores policies that name targetRefs: the selector it is.
	ap.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: maps.Clone(in.Selector.MatchLabels)}
	for _, r := range in.Rules {
		rule := &securityv1beta1.Rule{}
		for _, f := range r.From {
			rule.From = append(rule.From, &securityv1beta1.Rule_From{
				Source: &securityv1beta1.Source{Principals: slices.Clone(f.Source.Principals), IpBlocks: slices.Clone(f.Source.IPBlocks)},
			})
		}
		for _, t := range r.To {
			rule.To = append(rule.To, &securityv1beta1.Rule_To{
				Operation: &securityv1beta1.Operation{Ports: slices.Clone(t.Operation.Ports)},
			})
		}
		ap.Spec.Rules = append(ap.Spec.Rules, rule)
	}
	if a.outside != nil {
		for i := range p.Spec.Outside {
			blocks, ports := a.outside.entityRule(&p.Spec.Outside[i], v1alpha1.DirectionIngress)
			if len(blocks) == 0 {
				continue
			}
			rule := &securityv1beta1.Rule{From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{IpBlocks: slices.Clone(blocks)}}}}
			if len(ports) > 0 {
				op := &securityv1beta1.Operation{}
				for _, port := range ports {
					if port.Port != nil {
						op.Ports = append(op.Ports, port.Port.String())
					}
				}
				rule.To = []*securityv1beta1.Rule_To{{Operation: op}}
			}
			ap.Spec.Rules = append(ap.Spec.Rules, rule)
		}
	}
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		ap.Annotations = map[string]string{dryRunAnnotation: "true"}
	}
	return ap, nil
}

func (authorizationPolicies) sync(have, want *securityv1.AuthorizationPolicy) bool {
	changed := false
	// proto.Equal, not a reflective comparison: the spec is a protobuf message,
	// with internal state that differs between equal messages.
	if !proto.Equal(&have.Spec, &want.Spec) {
		want.Spec.DeepCopyInto(&have.Spec)
		changed = true
	}
	// Only the dry-run annotation is the policy's; other tools' stay. In protect
	// mode any value of it is drift, "false" included.
	wantValue, wantSet := want.Annotations[dryRunAnnotation]
	haveValue, haveSet := have.Annotations[dryRunAnnotation]
	switch {
	case wantSet && (!haveSet || haveValue != wantValue):
		if have.Annotations == nil {
			have.Annotations = map[string]string{}
		}
		have.Annotations[dryRunAnnotation] = wantValue
		changed = true
	case !wantSet && haveSet:
		delete(have.Annotations, dryRunAnnotation)
		changed = true
	}
	return changed
}

// encode writes spec.action explicitly. Istio's JSON encoding leaves out a
// field at its protobuf default, and ALLOW is the default action: the object
// would work the same without it, but kubectl's Action column and a reader of
// the YAML would not see what it does.
func (authorizationPolicies) encode(ap *securityv1.AuthorizationPolicy) (client.Object, error) {
	data, err := json.Marshal(ap)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy"))
	delete(u.Object, "status") // the status subresource's, not ours to write
	if err := unstructured.SetNestedField(u.Object, ap.Spec.Action.String(), "spec", "action"); err != nil {
		return nil, err
	}
	return u, nil
}
