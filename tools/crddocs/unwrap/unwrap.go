// Package unwrap joins the lines of a description's paragraphs, the rule that
// crddocs applies to the CRDs and that the API tests check them against.
package unwrap

import (
	"regexp"
	"strings"
)

// ownLine matches a line that keeps its own line: a list item or an indented
// (preformatted) line.
var ownLine = regexp.MustCompile(`^(\s|[-*+] |\d+[.)] )`)

// Description joins each paragraph's wrapped lines with a space. Paragraphs
// (separated by a blank line), list items and indented lines keep their line
// breaks.
func Description(s string) string {
	paragraphs := strings.Split(s, "\n\n")
	for i, p := range paragraphs {
		lines := strings.Split(p, "\n")
		var b strings.Builder
		for j, l := range lines {
			switch {
			case j == 0:
			case ownLine.MatchString(l):
				b.WriteByte('\n')
			default:
				b.WriteByte(' ')
				l = strings.TrimLeft(l, " \t")
			}
			b.WriteString(l)
		}
		paragraphs[i] = b.String()
	}
	return strings.Join(paragraphs, "\n\n")
}

// Wrapped reports the first line of s that continues the paragraph above it:
// a line break that kubectl explain would print mid-sentence.
func Wrapped(s string) (string, bool) {
	for _, p := range strings.Split(s, "\n\n") {
		lines := strings.Split(p, "\n")
		for _, l := range lines[1:] {
			if !ownLine.MatchString(l) {
				return l, true
			}
		}
	}
	return "", false
}
