package reviewextension

import (
	"fmt"
	"strings"
)

// stateStyle is how an edge in a state is drawn. The palette below is the one
// place that says so: the page's stylesheet (palette.css), its script (the
// palette JSON in the page), DOT and Mermaid are all made from it, so that a
// graph pasted into a pull request reads like the page.
type stateStyle struct {
	// Color is the line's colour.
	Color string `json:"color"`
	// Text is the colour of text about the state on white: darker than Color
	// where Color is too light to read.
	Text string `json:"text"`
	// Line is solid, dashed or dotted.
	Line string `json:"line"`
	// Bold draws the line thick: a state that a reviewer must not miss, or
	// that enforces.
	Bold bool `json:"bold"`
}

// palette is the style of each edge state.
var palette = map[EdgeState]stateStyle{
	StateLearned:    {Color: "#6b7280", Text: "#6b7280", Line: "dashed"},
	StateMonitored:  {Color: "#2563eb", Text: "#2563eb", Line: "solid"},
	StateProtected:  {Color: "#16a34a", Text: "#16a34a", Line: "solid", Bold: true},
	StateUnused:     {Color: "#a16207", Text: "#a16207", Line: "dotted"},
	StateWouldBlock: {Color: "#ea580c", Text: "#c2410c", Line: "dashed"},
	StateViolated:   {Color: "#dc2626", Text: "#b91c1c", Line: "solid", Bold: true},
}

// dotStyle is the Graphviz style of a state.
func (s stateStyle) dotStyle() string {
	if s.Bold {
		return "bold"
	}
	return s.Line
}

// mermaidArrow is the Mermaid link of a state: dotted for what nothing
// enforces, thick for what protects or is violated.
func (s stateStyle) mermaidArrow() string {
	switch {
	case s.Bold:
		return "==>"
	case s.Line != "solid":
		return "-.->"
	}
	return "-->"
}

// paletteCSS is the stylesheet of the palette: a custom property per state
// (--state-<state> for lines, --state-<state>-text for text), which
// review.css uses, and the legend's line samples.
func paletteCSS() []byte {
	var b strings.Builder
	b.WriteString("/* The edge states' colours, made by the review extension from its palette. */\n:root {\n")
	for _, s := range states {
		fmt.Fprintf(&b, "  --state-%s: %s;\n  --state-%s-text: %s;\n", s, palette[s].Color, s, palette[s].Text)
	}
	b.WriteString("}\n")
	for _, s := range states {
		width := 2
		if palette[s].Bold {
			width = 3
		}
		fmt.Fprintf(&b, ".legend .%s::before { border-top: %dpx %s var(--state-%s); }\n", s, width, palette[s].Line, s)
	}
	return []byte(b.String())
}

// paletteJSON is the palette as the page's script reads it, in the states'
// order (the order in which a stronger style wins).
type paletteJSON struct {
	States []EdgeState              `json:"states"`
	Styles map[EdgeState]stateStyle `json:"styles"`
}

func newPaletteJSON() paletteJSON {
	return paletteJSON{States: states, Styles: palette}
}
