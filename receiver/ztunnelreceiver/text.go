package ztunnelreceiver

import (
	"bytes"
	"strings"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// textResult says what decodeText made of a text.
type textResult int

const (
	// textLine: l holds a whole line.
	textLine textResult = iota
	// textPartial: a CRI partial line, kept until its final part arrives.
	textPartial
	// textMalformed: not a ztunnel line.
	textMalformed
)

// decodeText decodes text that carries a ztunnel line: the JSON line itself, or
// the JSON line with a CRI prefix (partial lines are joined per key). When
// messageOnly is set, text that is neither is the bare message, as fluent-bit sends
// it when the other fields are attributes.
func (r *ztunnelReceiver) decodeText(key string, text []byte, messageOnly bool, l *line) (textResult, flowsource.DropReason) {
	text = bytes.TrimSpace(text)
	if len(text) > 0 && text[0] == '{' {
		// One copy: text may be a buffer that its reader reuses.
		return decodeJSONLine(string(text), l)
	}
	content, partial, ok := parseCRI(text)
	if !ok {
		if messageOnly && len(text) > 0 {
			l.Message = string(text)
			return textLine, ""
		}
		return textMalformed, flowsource.DropMalformed
	}
	whole, done, overflow := r.partials.add(key, content, partial)
	switch {
	case overflow:
		return textMalformed, flowsource.DropMalformed
	case !done:
		return textPartial, ""
	}
	whole = bytes.TrimSpace(whole)
	if len(whole) == 0 || whole[0] != '{' {
		return textMalformed, flowsource.DropMalformed
	}
	return decodeJSONLine(string(whole), l)
}

// decodeString is decodeText for a text that is a string, as an OTLP body
// is: a JSON line is read in place, without a copy; l's fields may then share
// text's memory.
func (r *ztunnelReceiver) decodeString(key, text string, messageOnly bool, l *line) (textResult, flowsource.DropReason) {
	if trimmed := strings.TrimSpace(text); trimmed != "" && trimmed[0] == '{' {
		return decodeJSONLine(trimmed, l)
	}
	return r.decodeText(key, []byte(text), messageOnly, l)
}

// decodeJSONLine reads one JSON line: with the scanner when the line is as
// ztunnel writes it, else with the full parser.
func decodeJSONLine(s string, l *line) (textResult, flowsource.DropReason) {
	if l.scanJSON(s) {
		return textLine, ""
	}
	if err := l.decodeJSON(s); err != nil {
		return textMalformed, flowsource.DropMalformed
	}
	return textLine, ""
}
