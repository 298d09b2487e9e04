package reviewextension

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// wantEdges are the fixtures' edges: source, target and state.
var wantEdges = []struct {
	source, target string
	state          EdgeState
}{
	{"w:shop/Deployment/frontend", "w:shop/Deployment/web", StateLearned},
	{"x:External:203.0.113.7/32", "w:shop/Deployment/web", StateWouldBlock},
	{"w:shop/Deployment/web", "x:APIServer:10.0.0.1/32", StateLearned},
	{"w:shop/Deployment/web", "w:shop/StatefulSet/db", StateLearned},
	{"w:shop/Deployment/web", "w:shop/StatefulSet/db", StateMonitored},
	{"w:shop/Deployment/batch", "w:shop/StatefulSet/db", StateViolated},
	{"r:shop/statefulset-db-ingress/ingress[1]", "w:shop/StatefulSet/db", StateUnused},
	{"w:shop/Deployment/web", "w:pay/Deployment/api", StateProtected},
	{"x:Host:192.168.1.10/32", "w:pay/Deployment/api", StateProtected},
}

func TestBuildGraph(t *testing.T) {
	f := newFixtures(time.Now())
	g := buildGraph("", f.proposals, f.policies)
	if len(g.Edges) != len(wantEdges) {
		t.Fatalf("%d edges, want %d: %+v", len(g.Edges), len(wantEdges), g.Edges)
	}
	for i, w := range wantEdges {
		e := g.Edges[i]
		if e.Source != w.source || e.Target != w.target || e.State != w.state {
			t.Errorf("edge %d: %s -> %s %s, want %s -> %s %s", i, e.Source, e.Target, e.State, w.source, w.target, w.state)
		}
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
	want := map[EdgeState]int{StateLearned: 3, StateWouldBlock: 1, StateMonitored: 1, StateViolated: 1, StateUnused: 1, StateProtected: 2}
	for s, n := range want {
		if g.Counts[s] != n {
			t.Errorf("%d %s edges, want %d", g.Counts[s], s, n)
		}
	}
}

func TestUnlistedViolationIsDrawn(t *testing.T) {
	f := newFixtures(time.Now())
	f.policies[0].Status.Observed = nil // the violation's edge is not listed
	g := buildGraph("shop", nil, f.policies[:1])
	var violated int
	for _, e := range g.Edges {
		if e.State == StateViolated && e.Source == "w:shop/Deployment/batch" {
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
		`"w:shop/Deployment/batch" -> "w:shop/StatefulSet/db" [label="TCP/5432 violated", color="#dc2626"`,
		`"x:External:203.0.113.7/32" [label="External 203.0.113.7/32", shape=ellipse];`,
		`"r:shop/statefulset-db-ingress/ingress[1]" -> "w:shop/StatefulSet/db" [label="unused unused"`,
	} {
		if !strings.Contains(dot.String(), want) {
			t.Errorf("DOT does not have %s:\n%s", want, dot.String())
		}
	}
	for _, want := range []string{"flowchart LR", `subgraph ns0["pay"]`, `subgraph ns1["shop"]`, `|"TCP/8443 protected"|`, `-.->|"TCP/8080 would-block"|`,
		"linkStyle 5 stroke:#dc2626"} {
		if !strings.Contains(mmd.String(), want) {
			t.Errorf("Mermaid does not have %s:\n%s", want, mmd.String())
		}
	}
	// The same graph gives the same text, so that it diffs well in a pull request.
	var again bytes.Buffer
	_ = writeDOT(&again, buildGraph("", f.proposals, f.policies))
	if again.String() != dot.String() {
		t.Error("DOT is not stable")
	}
}
