package render

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// ciliumNetworkPolicyGVK is Cilium's namespaced policy, which the cilium
// backend renders. It is handled as unstructured: Cilium's typed API package
// brings a hundred more packages of the agent into the distribution, for a
// spec that the types below write in full.
var ciliumNetworkPolicyGVK = schema.GroupVersionKind{Group: "cilium.io", Version: "v2", Kind: "CiliumNetworkPolicy"}

// CiliumNetworkPolicyResource is the resource of Cilium's CiliumNetworkPolicy CRD.
var CiliumNetworkPolicyResource = ciliumNetworkPolicyGVK.GroupVersion().WithResource("ciliumnetworkpolicies")

// The spec of a CiliumNetworkPolicy, in the fields the cilium backend writes,
// with the JSON names of Cilium's API (pkg/policy/api: Rule, EgressRule,
// IngressRule, PortRule, CIDRRule, FQDNSelector, PortRuleDNS).
type (
	cnpSpec struct {
		EndpointSelector metav1.LabelSelector `json:"endpointSelector"`
		Ingress          []cnpRule            `json:"ingress,omitempty"`
		Egress           []cnpRule            `json:"egress,omitempty"`
		// IngressDeny and EgressDeny are never written: an empty list of
		// rules for a direction is what puts the pods into default deny.
	}
	cnpRule struct {
		FromEndpoints []metav1.LabelSelector `json:"fromEndpoints,omitempty"`
		FromCIDRSet   []cnpCIDR              `json:"fromCIDRSet,omitempty"`
		FromEntities  []string               `json:"fromEntities,omitempty"`
		ToEndpoints   []metav1.LabelSelector `json:"toEndpoints,omitempty"`
		ToCIDRSet     []cnpCIDR              `json:"toCIDRSet,omitempty"`
		ToEntities    []string               `json:"toEntities,omitempty"`
		ToFQDNs       []cnpFQDN              `json:"toFQDNs,omitempty"`
		ToPorts       []cnpPortRule          `json:"toPorts,omitempty"`
	}
	cnpCIDR struct {
		CIDR   string   `json:"cidr"`
		Except []string `json:"except,omitempty"`
	}
	cnpFQDN struct {
		MatchName    string `json:"matchName,omitempty"`
		MatchPattern string `json:"matchPattern,omitempty"`
	}
	cnpPortRule struct {
		Ports []cnpPort   `json:"ports"`
		Rules *cnpL7Rules `json:"rules,omitempty"`
	}
	cnpPort struct {
		Port     string `json:"port"`
		EndPort  int32  `json:"endPort,omitempty"`
		Protocol string `json:"protocol"`
	}
	cnpL7Rules struct {
		DNS []cnpFQDN `json:"dns"`
	}
)

// Cilium's labels for what a NetworkPolicy selects by other means: the
// pod's namespace, and the labels of that namespace.
const (
	ciliumNamespaceLabel       = "k8s:io.kubernetes.pod.namespace"
	ciliumNamespaceLabelPrefix = "io.cilium.k8s.namespace.labels."
)

// Cilium's entities for the outside peers.
var ciliumEntities = map[v1alpha1.Entity][]string{
	v1alpha1.EntityAPIServer:   {"kube-apiserver"},
	v1alpha1.EntityNodes:       {"host", "remote-node"},
	v1alpha1.EntityHost:        {"host"},
	v1alpha1.EntityRemoteNodes: {"remote-node"},
}

// clusterDNS is the rule that a policy with DNS names needs towards the
// cluster's DNS: toFQDNs allows the addresses that Cilium's DNS proxy saw the
// names resolve to, and only a DNS rule sends the pod's lookups through the
// proxy (Cilium's documentation, "DNS based" policies). It allows every
// lookup, as the workload made them before, to the kube-dns pods.
var clusterDNS = cnpRule{
	ToEndpoints: []metav1.LabelSelector{{MatchLabels: map[string]string{
		ciliumNamespaceLabel: "kube-system", "k8s:k8s-app": "kube-dns",
	}}},
	ToPorts: []cnpPortRule{{
		Ports: []cnpPort{{Port: "53", Protocol: "ANY"}},
		Rules: &cnpL7Rules{DNS: []cnpFQDN{{MatchPattern: "*"}}},
	}},
}

// ciliumNetworkPolicies renders the cilium backend: in protect mode a
// CiliumNetworkPolicy of spec.kubernetes and spec.outside, in Cilium's own
// terms; in monitor mode none, as for kubernetes: Cilium has no per-policy
// audit mode, and the flows are judged in software instead.
type ciliumNetworkPolicies struct{}

var _ nativeKind[*unstructured.Unstructured] = ciliumNetworkPolicies{}

func (ciliumNetworkPolicies) kind() string { return "CiliumNetworkPolicy" }

func (ciliumNetworkPolicies) empty() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ciliumNetworkPolicyGVK)
	return u
}

func (ciliumNetworkPolicies) outcome(p *v1alpha1.WorkloadNetworkPolicy) (bool, string, string) {
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		return false, v1alpha1.ReasonMonitor, "monitor mode: no CiliumNetworkPolicy; flows are judged against the spec"
	}
	return true, v1alpha1.ReasonProtect, "protect mode: the CiliumNetworkPolicy is rendered"
}

func (ciliumNetworkPolicies) desired(p *v1alpha1.WorkloadNetworkPolicy) (*unstructured.Unstructured, error) {
	spec, err := ciliumSpec(&p.Spec.PolicySpec)
	if err != nil {
		return nil, err
	}
	content, err := toUnstructured(spec)
	if err != nil {
		return nil, err
	}
	u := ciliumNetworkPolicies{}.empty()
	u.SetNamespace(p.Namespace)
	u.SetName(p.Name)
	u.Object["spec"] = content
	return u, nil
}

func (ciliumNetworkPolicies) sync(have, want *unstructured.Unstructured) bool {
	if apiequality.Semantic.DeepEqual(have.Object["spec"], want.Object["spec"]) {
		return false
	}
	have.Object["spec"] = want.Object["spec"]
	return true
}

func (ciliumNetworkPolicies) encode(u *unstructured.Unstructured) (client.Object, error) {
	delete(u.Object, "status") // the agents', not ours to write
	return u, nil
}

// ciliumSpec is the CiliumNetworkPolicy spec of a policy spec: the workload by
// its pod selector; each rule of spec.kubernetes for the direction, its pod
// peers as endpoint selectors, its address blocks as CIDR sets; each outside
// peer as Cilium's entity or, egress only, its DNS name.
func ciliumSpec(ps *v1alpha1.PolicySpec) (*cnpSpec, error) {
	k := ps.Kubernetes
	if k == nil {
		return nil, errors.New("backend cilium without spec.kubernetes")
	}
	spec := &cnpSpec{EndpointSelector: *k.PodSelector.DeepCopy()}
	var rules []cnpRule
	add := func(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) {
		var r cnpRule
		var endpoints []metav1.LabelSelector
		var cidrs []cnpCIDR
		for _, peer := range peers {
			if peer.IPBlock != nil {
				cidrs = append(cidrs, cnpCIDR{CIDR: peer.IPBlock.CIDR, Except: peer.IPBlock.Except})
				continue
			}
			endpoints = append(endpoints, endpointSelector(peer))
		}
		if len(peers) == 0 {
			r.FromEntities, r.ToEntities = []string{"all"}, []string{"all"}
		}
		r.FromEndpoints, r.ToEndpoints = endpoints, endpoints
		r.FromCIDRSet, r.ToCIDRSet = cidrs, cidrs
		r.ToPorts = ciliumPorts(ports)
		rules = append(rules, r)
	}
	if ps.Direction == v1alpha1.DirectionIngress {
		for _, r := range k.Ingress {
			add(r.From, r.Ports)
		}
	} else {
		for _, r := range k.Egress {
			add(r.To, r.Ports)
		}
	}
	names := false
	for _, o := range ps.Outside {
		r := cnpRule{ToPorts: ciliumPorts(o.Ports)}
		switch {
		case o.Entity != "":
			r.FromEntities, r.ToEntities = ciliumEntities[o.Entity], ciliumEntities[o.Entity]
		case ps.Direction == v1alpha1.DirectionIngress:
			continue // Cilium has no fromFQDNs: the judge says so (netpolmatch.Rendered)
		default:
			r.ToFQDNs = []cnpFQDN{fqdnSelector(o.DNSName)}
			names = true
		}
		rules = append(rules, r)
	}
	if names && !proxyLookups(rules) {
		rules = append(rules, clusterDNS)
	}
	if ps.Direction == v1alpha1.DirectionIngress {
		for i := range rules {
			rules[i].ToEndpoints, rules[i].ToCIDRSet, rules[i].ToEntities, rules[i].ToFQDNs = nil, nil, nil, nil
		}
		// An empty list would not put the pods into default deny for the
		// direction; a rule that selects nothing does, as Cilium documents.
		spec.Ingress = orDenyAll(rules)
	} else {
		for i := range rules {
			rules[i].FromEndpoints, rules[i].FromCIDRSet, rules[i].FromEntities = nil, nil, nil
		}
		spec.Egress = orDenyAll(rules)
	}
	return spec, nil
}

// orDenyAll is rules, or when there are none the one rule that allows nothing
// and so puts the direction into default deny: a CiliumNetworkPolicy without
// rules for a direction leaves it open.
func orDenyAll(rules []cnpRule) []cnpRule {
	if len(rules) > 0 {
		return rules
	}
	return []cnpRule{{}}
}

// endpointSelector turns a NetworkPolicy pod peer into Cilium's endpoint
// selector: the pod selector's labels as they are; the namespace selector's
// as Cilium labels a pod's namespace labels; a pod selector alone selects in
// the policy's namespace, which is what a CiliumNetworkPolicy's endpoint
// selector without a namespace does too; an empty namespace selector selects
// every namespace.
func endpointSelector(peer networkingv1.NetworkPolicyPeer) metav1.LabelSelector {
	var sel metav1.LabelSelector
	if peer.PodSelector != nil {
		sel = *peer.PodSelector.DeepCopy()
	}
	ns := peer.NamespaceSelector
	if ns == nil {
		return sel
	}
	if sel.MatchLabels == nil && len(ns.MatchLabels) > 0 {
		sel.MatchLabels = map[string]string{}
	}
	for k, v := range ns.MatchLabels {
		sel.MatchLabels[ciliumNamespaceLabelPrefix+k] = v
	}
	for _, e := range ns.MatchExpressions {
		e = *e.DeepCopy()
		e.Key = ciliumNamespaceLabelPrefix + e.Key
		sel.MatchExpressions = append(sel.MatchExpressions, e)
	}
	if len(ns.MatchLabels) == 0 && len(ns.MatchExpressions) == 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: ciliumNamespaceLabel, Operator: metav1.LabelSelectorOpExists})
	}
	return sel
}

// ciliumPorts turns NetworkPolicy ports into one port rule; none for any port.
// A named port stays a name, which Cilium resolves as a NetworkPolicy would.
func ciliumPorts(ports []networkingv1.NetworkPolicyPort) []cnpPortRule {
	if len(ports) == 0 {
		return nil
	}
	pr := cnpPortRule{}
	for _, p := range ports {
		cp := cnpPort{Protocol: string(corev1.ProtocolTCP), Port: "0"}
		if p.Protocol != nil {
			cp.Protocol = string(*p.Protocol)
		}
		if p.Port != nil {
			cp.Port = p.Port.String()
		}
		if p.EndPort != nil {
			cp.EndPort = *p.EndPort
		}
		pr.Ports = append(pr.Ports, cp)
	}
	return []cnpPortRule{pr}
}

// proxyLookups sends the lookups that the rules allow through Cilium's DNS
// proxy, as toFQDNs needs: the port 53 of each rule that allows it (the rule
// that learning learned towards the cluster's DNS) gets the DNS rule of
// clusterDNS, in a port rule of its own, so that no other port of the rule
// goes through the proxy. It reports whether any rule allows port 53; when
// none does, clusterDNS is the one rule towards the cluster's DNS, and a
// policy never has two.
func proxyLookups(rules []cnpRule) bool {
	found := false
	for i := range rules {
		var kept, dns []cnpPortRule
		for _, pr := range rules[i].ToPorts {
			var other, lookups []cnpPort
			for _, p := range pr.Ports {
				if p.Port == "53" && p.EndPort == 0 {
					lookups = append(lookups, p)
				} else {
					other = append(other, p)
				}
			}
			if len(lookups) == 0 || pr.Rules != nil {
				kept = append(kept, pr)
				continue
			}
			if len(other) > 0 {
				kept = append(kept, cnpPortRule{Ports: other})
			}
			dns = append(dns, cnpPortRule{Ports: lookups, Rules: clusterDNS.ToPorts[0].Rules})
		}
		if len(dns) > 0 {
			kept = append(kept, dns...)
			rules[i].ToPorts, found = kept, true
		}
	}
	return found
}

// fqdnSelector is the toFQDNs selector of a DNS name of spec.outside: a
// pattern for a name with *, else the name.
func fqdnSelector(name string) cnpFQDN {
	if strings.Contains(name, "*") {
		return cnpFQDN{MatchPattern: name}
	}
	return cnpFQDN{MatchName: name}
}

// toUnstructured is v as an object read from the API server holds it (whole
// numbers as int64), so that an unchanged object compares equal.
func toUnstructured(v any) (map[string]any, error) {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		return nil, fmt.Errorf("CiliumNetworkPolicy spec: %w", err)
	}
	return out, nil
}
