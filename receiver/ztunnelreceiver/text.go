package ztunnelreceiver

import (
	"bytes"

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
		return decodeJSONLine(text, l)
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
	return decodeJSONLine(whole, l)
}

func decodeJSONLine(b []byte, l *line) (textResult, flowsource.DropReason) {
	if err := l.decodeJSON(b); err != nil {
		return textMalformed, flowsource.DropMalformed
	}
	return textLine, ""
}
