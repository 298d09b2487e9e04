package reviewextension

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// writeDOT writes g as a Graphviz digraph: a cluster per namespace, the
// outside peers on their own, and a line per connection. Nodes and edges come in the graph's order, so
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
		s := palette[e.State]
		fmt.Fprintf(&b, "  %s -> %s [label=%s, color=%s, fontcolor=%s, style=%s];\n", strconv.Quote(e.Source), strconv.Quote(e.Target),
			strconv.Quote(e.Text()), strconv.Quote(dotColor(e)), strconv.Quote(s.Text), s.dotStyle())
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMermaid writes g as a Mermaid flowchart, which GitHub draws in a
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
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.Source], palette[e.State].mermaidArrow(), mermaidText(e.Text()), ids[e.Target])
	}
	// Mermaid draws a link in one colour: the stronger end's, which the
	// label names with the other's.
	for i, e := range g.Edges {
		fmt.Fprintf(&b, "  linkStyle %d stroke:%s,color:%s\n", i, palette[e.State].Color, palette[e.State].Text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dotColor is an edge's colour in Graphviz: the source's half in its egress
// side's colour and the destination's half in its ingress side's, when the
// two differ.
func dotColor(e Edge) string {
	if e.Egress == nil || e.Ingress == nil || e.Egress.State == e.Ingress.State {
		return palette[e.State].Color
	}
	return palette[e.Egress.State].Color + ";0.5:" + palette[e.Ingress.State].Color
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
