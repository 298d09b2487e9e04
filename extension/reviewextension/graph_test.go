package reviewextension

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// wantEdge is an edge of the fixtures: source, target, the state it is drawn
// in, and each end's state ("" where no object lists the connection).
type wantEdge struct {
	source, target         string
	state, egress, ingress EdgeState
}

// wantEdges are the fixtures' edges, one per connection: web's egress
// proposal and db's ingress policy both list web -> db on 5432, which is one
// edge, learned at web's end and monitored at db's.
var wantEdges = []wantEdge{
	{"w:shop/Deployment/frontend", "w:shop/Deployment/web", StateLearned, "", StateLearned},
	{"x:External:203.0.113.7/32", "w:shop/Deployment/web", StateWouldBlock, "", StateWouldBlock},
	{"w:shop/Deployment/web", "x:APIServer:10.0.0.1/32", StateLearned, StateLearned, ""},
	{"w:shop/Deployment/web", "w:shop/StatefulSet/db", StateMonitored, StateLearned, StateMonitored},
	{"w:shop/Deployment/batch", "w:shop/StatefulSet/db", StateViolated, "", StateViolated},
	{"r:shop/statefulset-db-ingress/ingress[1]", "w:shop/StatefulSet/db", StateUnused, "", StateUnused},
	{"w:shop/Deployment/web", "w:pay/Deployment/api", StateProtected, "", StateProtected},
	{"x:Host:192.168.1.10/32", "w:pay/Deployment/api", StateProtected, "", StateProtected},
}

func (w wantEdge) String() string {
	return fmt.Sprintf("%s -> %s %s (egress %q, ingress %q)", w.source, w.target, w.state, w.egress, w.ingress)
}

func endState(e *End) EdgeState {
	if e == nil {
		return ""
	}
	return e.State
}

func TestBuildGraph(t *testing.T) {
	f := newFixtures(time.Now())
	g := buildGraph("", f.proposals, f.policies)
	if len(g.Edges) != len(wantEdges) {
		t.Fatalf("%d edges, want %d (one per connection): %+v", len(g.Edges), len(wantEdges), g.Edges)
	}
	for i, w := range wantEdges {
		e := g.Edges[i]
		got := wantEdge{e.Source, e.Target, e.State, endState(e.Egress), endState(e.Ingress)}
		if got != w {
			t.Errorf("edge %d: %s, want %s", i, got, w)
		}
	}
	// The shared edge: each end keeps its own object and flows; a click opens
	// the stronger end's, the policy.
	shared := g.Edges[3]
	if shared.Egress.Object.Name != "deployment-web-egress" || shared.Ingress.Object.Name != "statefulset-db-ingress" ||
		shared.Object != shared.Ingress.Object || shared.Egress.Flows != 40 || shared.Ingress.Flows != 40 {
		t.Errorf("web -> db: %+v, egress %+v, ingress %+v", shared, shared.Egress, shared.Ingress)
	}
	nodes := map[string]Node{}
	for _, n := range g.Nodes {
		nodes[n.ID] = n
	}
	for id, class := range map[string]string{
		"w:shop/Deployment/web": "Workload", "x:External:203.0.113.7/32": "External", "x:APIServer:10.0.0.1/32": "APIServer",
		"x:Host:192.168.1.10/32": "Host", "r:shop/statefulset-db-ingress/ingress[1]": ClassRule, "w:pay/Deployment/api": "Workload",
	} {
		if nodes[id].Class != class {
			t.Errorf("node %s: class %q, want %q", id, nodes[id].Class, class)
		}
	}
	if len(nodes) != 9 {
		t.Errorf("%d nodes, want 9: %v", len(nodes), g.Nodes)
	}
	if web := nodes["w:shop/Deployment/web"]; len(web.Objects) != 2 || web.Namespace != "shop" {
		t.Errorf("web: %+v, want the shop workload with its two proposals", web)
	}
	want := map[EdgeState]int{StateLearned: 2, StateWouldBlock: 1, StateMonitored: 1, StateViolated: 1, StateUnused: 1, StateProtected: 2}
	for s, n := range want {
		if g.Counts[s] != n {
			t.Errorf("%d %s edges, want %d", g.Counts[s], s, n)
		}
	}
}

// TestOneEdgePerConnection: a connection that both ends' objects list, in
// whichever order they come, is one edge with both ends' states; another
// port between the same workloads is another connection.
func TestOneEdgePerConnection(t *testing.T) {
	f := newFixtures(time.Now())
	db := f.policies[:1]
	webEgress := f.proposals[1:]
	for _, g := range []Graph{buildGraph("shop", webEgress, db), buildGraph("shop", nil, db), buildGraph("shop", webEgress, nil)} {
		seen := map[string]int{}
		for _, e := range g.Edges {
			seen[fmt.Sprintf("%s>%s/%s/%d", e.Source, e.Target, e.Protocol, e.Port)]++
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s drawn %d times", k, n)
			}
		}
	}
	g := buildGraph("shop", webEgress, db)
	var webDB []Edge
	for _, e := range g.Edges {
		if e.Source == "w:shop/Deployment/web" && e.Target == "w:shop/StatefulSet/db" {
			webDB = append(webDB, e)
		}
	}
	if len(webDB) != 1 || endState(webDB[0].Egress) != StateLearned || endState(webDB[0].Ingress) != StateMonitored {
		t.Fatalf("web -> db: %+v, want one edge, egress learned and ingress monitored", webDB)
	}
	// The policy switched to protect and the connection violated at db's end:
	// the edge is drawn violated, its egress end still learned.
	f.policies[0].Spec.Mode = "protect"
	f.policies[0].Status.Violations[0].Source.Name = "web"
	g = buildGraph("shop", webEgress, f.policies[:1])
	for _, e := range g.Edges {
		if e.Source == "w:shop/Deployment/web" && e.Target == "w:shop/StatefulSet/db" {
			if e.State != StateViolated || endState(e.Egress) != StateLearned || endState(e.Ingress) != StateViolated || e.Object.Kind != "policy" {
				t.Errorf("web -> db violated: %+v", e)
			}
			if got := e.Text(); got != "TCP/5432 egress learned, ingress violated" {
				t.Errorf("web -> db label %q", got)
			}
		}
	}
	// Another port is another connection.
	f = newFixtures(time.Now())
	f.proposals[1].Status.Observed[1].Port = 5433
	g = buildGraph("shop", f.proposals[1:], f.policies[:1])
	n := 0
	for _, e := range g.Edges {
		if e.Source == "w:shop/Deployment/web" && e.Target == "w:shop/StatefulSet/db" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("web -> db on 5432 and 5433: %d edges, want 2", n)
	}
}

func TestUnlistedViolationIsDrawn(t *testing.T) {
	f := newFixtures(time.Now())
	f.policies[0].Status.Observed = nil // the violation's edge is not listed
	g := buildGraph("shop", nil, f.policies[:1])
	var violated int
	for _, e := range g.Edges {
		if e.State == StateViolated && e.Source == "w:shop/Deployment/batch" && endState(e.Ingress) == StateViolated {
			violated++
		}
	}
	if violated != 1 {
		t.Fatalf("violated edges from batch: %d, want 1: %+v", violated, g.Edges)
	}
}

func TestDOTAndMermaid(t *testing.T) {
	f := newFixtures(time.Now())
	g := buildGraph("", f.proposals, f.policies)
	var dot, mmd bytes.Buffer
	if err := writeDOT(&dot, g); err != nil {
		t.Fatal(err)
	}
	if err := writeMermaid(&mmd, g); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"digraph review {", `label="shop";`, `label="pay";`,
		`"w:shop/Deployment/batch" -> "w:shop/StatefulSet/db" [label="TCP/5432 ingress violated", color="#dc2626", fontcolor="#b91c1c", style=bold];`,
		// Each end its colour: learned (grey) at web's half, monitored (blue) at db's.
		`"w:shop/Deployment/web" -> "w:shop/StatefulSet/db" [label="TCP/5432 egress learned, ingress monitored", color="#6b7280;0.5:#2563eb", fontcolor="#2563eb", style=solid];`,
		`"w:shop/Deployment/web" -> "x:APIServer:10.0.0.1/32" [label="TCP/443 egress learned", color="#6b7280", fontcolor="#6b7280", style=dashed];`,
		`"x:External:203.0.113.7/32" [label="External 203.0.113.7/32", shape=ellipse];`,
		`"r:shop/statefulset-db-ingress/ingress[1]" -> "w:shop/StatefulSet/db" [label="unused"`,
	} {
		if !strings.Contains(dot.String(), want) {
			t.Errorf("DOT does not have %s:\n%s", want, dot.String())
		}
	}
	for _, want := range []string{"flowchart LR", `subgraph ns0["pay"]`, `subgraph ns1["shop"]`, `==>|"TCP/8443 ingress protected"|`,
		`-.->|"TCP/8080 ingress would-block"|`, `-->|"TCP/5432 egress learned, ingress monitored"|`, "linkStyle 3 stroke:#2563eb", "linkStyle 4 stroke:#dc2626"} {
		if !strings.Contains(mmd.String(), want) {
			t.Errorf("Mermaid does not have %s:\n%s", want, mmd.String())
		}
	}
	// One line per connection in each: as many arrows as edges, and no line
	// twice.
	for name, text := range map[string]string{"DOT": dot.String(), "Mermaid": mmd.String()} {
		arrows, lines := 0, map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, " -> ") || strings.Contains(l, "-->") || strings.Contains(l, "==>") || strings.Contains(l, "-.->") {
				arrows++
				if lines[l] {
					t.Errorf("%s repeats %s", name, l)
				}
				lines[l] = true
			}
		}
		if arrows != len(wantEdges) {
			t.Errorf("%s has %d arrows, want %d:\n%s", name, arrows, len(wantEdges), text)
		}
	}
	// The same graph gives the same text, so that it diffs well in a pull request.
	var again bytes.Buffer
	_ = writeDOT(&again, buildGraph("", f.proposals, f.policies))
	if again.String() != dot.String() {
		t.Error("DOT is not stable")
	}
}
