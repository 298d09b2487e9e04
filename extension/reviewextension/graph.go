package reviewextension

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// EdgeState is what an edge of the graph is in the policy lifecycle.
type EdgeState string

// The states of an edge, from the weakest to the strongest claim on a
// reviewer's attention.
const (
	// StateLearned: a proposal's edge that its spec allows; nothing enforces it.
	StateLearned EdgeState = "learned"
	// StateMonitored: a policy in monitor mode allows it.
	StateMonitored EdgeState = "monitored"
	// StateProtected: a policy in protect mode allows it.
	StateProtected EdgeState = "protected"
	// StateUnused: a rule of a policy that no traffic used for the unused rule
	// age; its edge goes from a rule node to the target.
	StateUnused EdgeState = "unused"
	// StateWouldBlock: the object's spec does not allow the observed edge, so
	// protect mode would block it.
	StateWouldBlock EdgeState = "would-block"
	// StateViolated: the policy has active violations on the edge.
	StateViolated EdgeState = "violated"
)

// states are the edge states in the order of their claim on attention.
var states = []EdgeState{StateLearned, StateMonitored, StateProtected, StateUnused, StateWouldBlock, StateViolated}

// stateRank is each state's place in states.
var stateRank = func() map[EdgeState]int {
	m := map[EdgeState]int{}
	for i, s := range states {
		m[s] = i
	}
	return m
}()

// ClassRule is the class of the node that stands for an unused rule.
const ClassRule = "Rule"

// ObjectRef names the proposal or policy that an edge or node comes from.
type ObjectRef struct {
	// Kind is "proposal" or "policy".
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Path is the object's page on the review server.
func (o ObjectRef) Path() string {
	return "/" + o.Kind + "s/" + o.Namespace + "/" + o.Name
}

// Node is a workload, or a peer outside the cluster's workloads.
type Node struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Class     string `json:"class"`
	Namespace string `json:"namespace,omitempty"`
	// Objects are the proposals and policies that target this workload.
	Objects []ObjectRef `json:"objects,omitempty"`
}

// End is what one end of a connection says of it: the source's egress
// proposal or policy, or the destination's ingress one.
type End struct {
	State    EdgeState `json:"state"`
	Object   ObjectRef `json:"object"`
	Flows    int64     `json:"flows,omitempty"`
	LastSeen time.Time `json:"lastSeen,omitzero"`
}

// Edge is one connection (source, destination, protocol and port), drawn in
// the direction of the traffic, with what each end's objects say of it; or an
// unused rule; or a violation that no listed edge carries.
type Edge struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Target   string `json:"target"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port,omitempty"`
	// Egress is the source's egress side; nil when no egress object of the
	// source lists the connection (it learns no egress, or is no workload).
	Egress *End `json:"egress,omitempty"`
	// Ingress is the destination's ingress side, nil likewise.
	Ingress *End `json:"ingress,omitempty"`
	// State is the stronger claim of the two ends: how the edge is drawn as a
	// whole, and what the counts count.
	State EdgeState `json:"state"`
	// Object is the object of the end whose state the edge shows, which a
	// click opens.
	Object ObjectRef `json:"object"`
}

// Label is the edge's short text: protocol and port.
func (e Edge) Label() string {
	if e.State == StateUnused {
		return "unused"
	}
	if e.Protocol == "" {
		return string(e.State)
	}
	return fmt.Sprintf("%s/%d", e.Protocol, e.Port)
}

// Ends says each end's state: "egress learned, ingress protected".
func (e Edge) Ends() string {
	var parts []string
	if e.Egress != nil {
		parts = append(parts, "egress "+string(e.Egress.State))
	}
	if e.Ingress != nil {
		parts = append(parts, "ingress "+string(e.Ingress.State))
	}
	return strings.Join(parts, ", ")
}

// Text is the edge's label in DOT and Mermaid: protocol and port, and each
// end's state.
func (e Edge) Text() string {
	if e.State == StateUnused {
		return "unused"
	}
	return e.Label() + " " + e.Ends()
}

// Graph is the graph of one namespace's objects, or of the cluster's.
type Graph struct {
	// Namespace is the namespace whose objects the graph shows; empty for all.
	Namespace string `json:"namespace,omitempty"`
	Nodes     []Node `json:"nodes"`
	Edges     []Edge `json:"edges"`
	// Counts counts the edges by state.
	Counts map[EdgeState]int `json:"counts"`
}

// graphBuilder collects nodes by id, so that a workload met as a target and as
// a peer is one node, and edges by connection, so that a connection that the
// source's egress object and the destination's ingress object both list is
// one edge.
type graphBuilder struct {
	g     Graph
	nodes map[string]int
	edges map[edgeKey]int
}

// edgeKey is a connection: who to whom, on which protocol and port.
type edgeKey struct {
	source, target, protocol string
	port                     int32
}

// buildGraph draws the observed edges of proposals and policies.
func buildGraph(namespace string, proposals []v1alpha1.WorkloadNetworkPolicyProposal, policies []v1alpha1.WorkloadNetworkPolicy) Graph {
	b := &graphBuilder{g: Graph{Namespace: namespace, Nodes: []Node{}, Edges: []Edge{}, Counts: map[EdgeState]int{}},
		nodes: map[string]int{}, edges: map[edgeKey]int{}}
	for i := range proposals {
		p := &proposals[i]
		ref := ObjectRef{Kind: "proposal", Namespace: p.Namespace, Name: p.Name}
		target := b.target(p.Namespace, p.Spec.TargetRef, ref)
		for _, e := range p.Status.Observed {
			state := StateLearned
			if e.Verdict == v1alpha1.VerdictWouldBlock {
				state = StateWouldBlock
			}
			b.edge(ref, target, b.peer(e.Peer), p.Spec.Direction, state, e)
		}
	}
	for i := range policies {
		p := &policies[i]
		ref := ObjectRef{Kind: "policy", Namespace: p.Namespace, Name: p.Name}
		target := b.target(p.Namespace, p.Spec.TargetRef, ref)
		allowed := StateMonitored
		if p.Spec.Mode == v1alpha1.PolicyModeProtect {
			allowed = StateProtected
		}
		matched := make([]bool, len(p.Status.Violations))
		for _, e := range p.Status.Observed {
			state := allowed
			if e.Verdict == v1alpha1.VerdictWouldBlock {
				state = StateWouldBlock
			}
			for k, v := range p.Status.Violations {
				if violationOn(v, p.Spec.Direction, e) {
					state, matched[k] = StateViolated, true
				}
			}
			b.edge(ref, target, b.peer(e.Peer), p.Spec.Direction, state, e)
		}
		// A violation whose edge is not listed (observed is bounded, or the
		// status sync has not caught up) is drawn all the same.
		for k, v := range p.Status.Violations {
			if matched[k] {
				continue
			}
			end := v.Source
			if p.Spec.Direction == v1alpha1.DirectionEgress {
				end = v.Destination
			}
			peer := b.peer(violationPeer(end))
			e := v1alpha1.ObservedEdge{Protocol: v.Protocol, Port: v.DstPort, LastSeen: v.Timestamp}
			b.edge(ref, target, peer, p.Spec.Direction, StateViolated, e)
		}
		for _, rule := range unusedRules(p) {
			id := "r:" + p.Namespace + "/" + p.Name + "/" + rule
			b.node(Node{ID: id, Label: rule + " of " + p.Name, Class: ClassRule, Namespace: p.Namespace})
			// From the rule to the target, whichever the direction: the rule
			// is the policy's, not a peer's.
			b.connect(edgeKey{source: id, target: target}, p.Spec.Direction, End{State: StateUnused, Object: ref})
		}
	}
	for _, e := range b.g.Edges {
		b.g.Counts[e.State]++
	}
	slices.SortFunc(b.g.Nodes, func(a, c Node) int {
		return cmp.Or(cmp.Compare(a.Namespace, c.Namespace), cmp.Compare(a.ID, c.ID))
	})
	return b.g
}

func (b *graphBuilder) node(n Node) int {
	if i, ok := b.nodes[n.ID]; ok {
		return i
	}
	b.nodes[n.ID] = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	return len(b.g.Nodes) - 1
}

// target is the node of the workload that an object targets.
func (b *graphBuilder) target(namespace string, t v1alpha1.TargetRef, ref ObjectRef) string {
	id := workloadID(namespace, string(t.Kind), t.Name)
	i := b.node(Node{ID: id, Label: workloadLabel(string(t.Kind), t.Name), Class: string(v1alpha1.PeerClassWorkload), Namespace: namespace})
	b.g.Nodes[i].Objects = append(b.g.Nodes[i].Objects, ref)
	return id
}

// peer is the node of an edge's other end. Workloads are named by namespace,
// kind and name, or by their Istio principal; the other classes by address or
// DNS name, each class on its own.
func (b *graphBuilder) peer(p v1alpha1.ObservedPeer) string {
	switch {
	case p.Class == v1alpha1.PeerClassWorkload && p.Name != "":
		id := workloadID(p.Namespace, p.Kind, p.Name)
		b.node(Node{ID: id, Label: workloadLabel(p.Kind, p.Name), Class: string(p.Class), Namespace: p.Namespace})
		return id
	case p.Class == v1alpha1.PeerClassWorkload || p.Class == v1alpha1.PeerClassBarePod:
		what := cmp.Or(p.Principal, p.Name, p.Address)
		id := "p:" + string(p.Class) + ":" + p.Namespace + "/" + what
		b.node(Node{ID: id, Label: what, Class: string(p.Class), Namespace: p.Namespace})
		return id
	}
	what := cmp.Or(p.DNSName, p.Address, p.Principal, strings.ToLower(string(p.Class)))
	id := "x:" + string(p.Class) + ":" + what
	b.node(Node{ID: id, Label: string(p.Class) + " " + what, Class: string(cmp.Or(p.Class, v1alpha1.PeerClassUnidentified))})
	return id
}

// edge adds an observed edge of an object, in the traffic's direction.
func (b *graphBuilder) edge(ref ObjectRef, target, peer string, d v1alpha1.Direction, state EdgeState, e v1alpha1.ObservedEdge) {
	k := edgeKey{source: peer, target: target, protocol: string(e.Protocol), port: e.Port}
	if d == v1alpha1.DirectionEgress {
		k.source, k.target = target, peer
	}
	b.connect(k, d, End{State: state, Object: ref, Flows: e.Flows, LastSeen: e.LastSeen.Time})
}

// connect puts end on its side (d) of the connection's edge. Two objects on
// one side (a proposal beside the policy made from it, for a while) leave
// the stronger claim.
func (b *graphBuilder) connect(k edgeKey, d v1alpha1.Direction, end End) {
	i, ok := b.edges[k]
	if !ok {
		i = len(b.g.Edges)
		b.edges[k] = i
		b.g.Edges = append(b.g.Edges, Edge{ID: fmt.Sprintf("e:%s->%s/%s/%d", k.source, k.target, k.protocol, k.port),
			Source: k.source, Target: k.target, Protocol: k.protocol, Port: k.port})
	}
	e := &b.g.Edges[i]
	side := &e.Ingress
	if d == v1alpha1.DirectionEgress {
		side = &e.Egress
	}
	if *side == nil || stateRank[end.State] > stateRank[(*side).State] {
		*side = &end
	}
	// The edge shows the stronger end; the destination's side on a tie.
	shown := e.Ingress
	if shown == nil || (e.Egress != nil && stateRank[e.Egress.State] > stateRank[shown.State]) {
		shown = e.Egress
	}
	e.State, e.Object = shown.State, shown.Object
}

func workloadID(namespace, kind, name string) string {
	return "w:" + namespace + "/" + kind + "/" + name
}

func workloadLabel(kind, name string) string {
	if kind == "" {
		return name
	}
	return strings.ToLower(kind) + "/" + name
}

// violationOn reports whether active violation v is on observed edge e of a
// policy of direction d: the same protocol, the port (Istio reports 0) and the
// peer, by workload or by identity.
func violationOn(v v1alpha1.ViolationRecord, d v1alpha1.Direction, e v1alpha1.ObservedEdge) bool {
	if v.Protocol != e.Protocol || (v.DstPort != 0 && v.DstPort != e.Port) {
		return false
	}
	end := v.Source
	if d == v1alpha1.DirectionEgress {
		end = v.Destination
	}
	p := e.Peer
	switch {
	case end.Name != "" && p.Name != "":
		return end.Namespace == p.Namespace && end.Name == p.Name && (end.Kind == "" || p.Kind == "" || end.Kind == p.Kind)
	case end.Identity != "" && p.Principal != "":
		return end.Identity == p.Principal
	}
	// An end outside the workloads is not named: any such peer matches.
	return end.Name == "" && end.Identity == "" && p.Class != v1alpha1.PeerClassWorkload
}

// violationPeer is the observed peer that a violation's end stands for.
func violationPeer(end v1alpha1.ViolationEndpoint) v1alpha1.ObservedPeer {
	if end.Name != "" || end.Identity != "" {
		return v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassWorkload, Namespace: end.Namespace, Kind: end.Kind, Name: end.Name, Principal: end.Identity}
	}
	return v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassUnidentified}
}

// unusedRules are the rules that the policy's UnusedRules condition names: the
// status sync's judgement, with its unused rule age, is the one the page shows.
func unusedRules(p *v1alpha1.WorkloadNetworkPolicy) []string {
	c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionUnusedRules)
	if c == nil || c.Status != "True" {
		return nil
	}
	var out []string
	for _, r := range p.Status.RuleUse {
		if strings.Contains(c.Message, r.Rule+" (") {
			out = append(out, r.Rule)
		}
	}
	return out
}
