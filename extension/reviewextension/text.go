package reviewextension

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// edgeStyle is how each state is drawn in DOT and Mermaid: the same colours as
// the page's legend, so that a graph pasted into a pull request reads the same.
var edgeStyle = map[EdgeState]struct{ color, dot string }{
	StateLearned:    {"#6b7280", "dashed"},
	StateMonitored:  {"#2563eb", "solid"},
	StateProtected:  {"#16a34a", "bold"},
	StateUnused:     {"#a16207", "dotted"},
	StateWouldBlock: {"#ea580c", "dashed"},
	StateViolated:   {"#dc2626", "bold"},
}

// writeDOT writes g as a Graphviz digraph: a cluster per namespace, and the
// outside peers on their own. Nodes and edges come in the graph's order, so
// that the text of one graph is stable and diffs well.
func writeDOT(w io.Writer, g Graph) error {
	var b strings.Builder
	b.WriteString("digraph review {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"sans-serif\"];\n  edge [fontname=\"sans-serif\", fontsize=10];\n")
	ns, order := groups(g)
	for i, name := range order {
		indent := "  "
		if name != "" {
			fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n", i, strconv.Quote(name))
			indent = "    "
		}
		for _, n := range ns[name] {
			shape := "box"
			if n.Class != "Workload" {
				shape = "ellipse"
			}
			fmt.Fprintf(&b, "%s%s [label=%s, shape=%s];\n", indent, strconv.Quote(n.ID), strconv.Quote(n.Label), shape)
		}
		if name != "" {
			b.WriteString("  }\n")
		}
	}
	for _, e := range g.Edges {
		s := edgeStyle[e.State]
		fmt.Fprintf(&b, "  %s -> %s [label=%s, color=%s, fontcolor=%s, style=%s];\n", strconv.Quote(e.Source), strconv.Quote(e.Target),
			strconv.Quote(e.Label()+" "+string(e.State)), strconv.Quote(s.color), strconv.Quote(s.color), s.dot)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMermaid writes g as a Mermaid flowchart, which GitHub renders in a
// pull request: a subgraph per namespace, and a linkStyle per edge for its
// state's colour.
func writeMermaid(w io.Writer, g Graph) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		ids[n.ID] = "n" + strconv.Itoa(i) // Mermaid ids cannot carry / or :
	}
	ns, order := groups(g)
	for i, name := range order {
		indent := "  "
		if name != "" {
			fmt.Fprintf(&b, "  subgraph ns%d[\"%s\"]\n", i, mermaidText(name))
			indent = "    "
		}
		for _, n := range ns[name] {
			open, end := "[", "]"
			if n.Class != "Workload" {
				open, end = "([", "])"
			}
			fmt.Fprintf(&b, "%s%s%s\"%s\"%s\n", indent, ids[n.ID], open, mermaidText(n.Label), end)
		}
		if name != "" {
			b.WriteString("  end\n")
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		switch e.State {
		case StateLearned, StateWouldBlock, StateUnused:
			arrow = "-.->"
		case StateProtected, StateViolated:
			arrow = "==>"
		case StateMonitored:
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.Source], arrow, mermaidText(e.Label()+" "+string(e.State)), ids[e.Target])
	}
	for i, e := range g.Edges {
		fmt.Fprintf(&b, "  linkStyle %d stroke:%s,color:%s\n", i, edgeStyle[e.State].color, edgeStyle[e.State].color)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// groups sorts the nodes by namespace, the outside peers ("") last.
func groups(g Graph) (map[string][]Node, []string) {
	by := map[string][]Node{}
	var order []string
	for _, n := range g.Nodes {
		if _, ok := by[n.Namespace]; !ok && n.Namespace != "" {
			order = append(order, n.Namespace)
		}
		by[n.Namespace] = append(by[n.Namespace], n)
	}
	if _, ok := by[""]; ok {
		order = append(order, "")
	}
	return by, order
}

// mermaidText escapes what would end a Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}
