package ztunnelreceiver

import "strings"

// scanJSON fills l from one ztunnel JSON line, s, without building a tree of its
// values: it reads the flat object ztunnel writes, keeps the string values of
// the keys line reads (l's fields then share s's memory) and only steps over
// the others. It reads a subset of what decodeJSON accepts and reports false
// for anything else: a backslash anywhere, an array, an object nested deeper
// than the inbound span, a syntax error. The caller then decodes the line with
// decodeJSON, so that a line gives the same fields, or the same error, either
// way; only the cost differs. l is changed only when scanJSON reports true.
func (l *line) scanJSON(s string) bool {
	// A line with an escape anywhere is left to decodeJSON: then no string
	// needs to be searched for one.
	if s == "" || s[0] != '{' || strings.IndexByte(s, '\\') >= 0 {
		return false
	}
	var sc scanner
	rest, ok := sc.object(s[1:], l, 1)
	if !ok || skipJSONSpace(rest) != "" {
		return false
	}
	for _, f := range sc.found[:sc.n] {
		*f.dst = f.val
	}
	return true
}

// scanner keeps the fields a line gives, in order, as decodeJSON takes them:
// the first maxFields string values of known keys.
type scanner struct {
	found [maxFields]struct {
		dst *string
		val string
	}
	n int
}

func (sc *scanner) take(dst *string, val string) {
	if dst != nil && sc.n < maxFields {
		sc.found[sc.n].dst, sc.found[sc.n].val = dst, val
		sc.n++
	}
}

// object reads the members of an object after its '{' and returns what follows
// its '}'. At depth 1 it takes the fields of l; within the inbound span (depth
// 2) only the first peer, as fastjson's Get finds it.
func (sc *scanner) object(s string, l *line, depth int) (string, bool) {
	s = skipJSONSpace(s)
	if s != "" && s[0] == '}' {
		return s[1:], true
	}
	peerTaken := false
	for {
		s = skipJSONSpace(s)
		if s == "" || s[0] != '"' {
			return s, false
		}
		key, rest, ok := jsonString(s[1:])
		if !ok {
			return s, false
		}
		s = skipJSONSpace(rest)
		if s == "" || s[0] != ':' {
			return s, false
		}
		s = skipJSONSpace(s[1:])
		if s == "" {
			return s, false
		}
		switch {
		case s[0] == '"':
			val, after, valid := jsonString(s[1:])
			if !valid {
				return s, false
			}
			switch {
			case depth == 1 && key != "inbound":
				sc.take(l.field(key), val)
			case depth == 2 && key == "peer" && !peerTaken:
				sc.take(&l.Inbound.Peer, val)
			}
			s = after
		case s[0] == '{' && depth == 1 && key == "inbound":
			if s, ok = sc.object(s[1:], l, 2); !ok {
				return s, false
			}
		case s[0] == '{' || s[0] == '[':
			return s, false
		default:
			if s, ok = jsonScalar(s); !ok {
				return s, false
			}
		}
		if depth == 2 && key == "peer" {
			peerTaken = true
		}
		s = skipJSONSpace(s)
		switch {
		case s == "":
			return s, false
		case s[0] == ',':
			s = s[1:]
		case s[0] == '}':
			return s[1:], true
		default:
			return s, false
		}
	}
}

// jsonString reads a string after its opening quote: its text and what follows
// the closing quote. The line has no escape (scanJSON made sure), so the next
// quote ends the string.
func jsonString(s string) (val, rest string, ok bool) {
	n := strings.IndexByte(s, '"')
	if n < 0 {
		return "", s, false
	}
	return s[:n], s[n+1:], true
}

// jsonScalar steps over a number, true, false or null. A number is what
// fastjson takes for one, a run of digits, signs, dots and exponents, when it
// starts with a digit or a minus followed by one of those.
func jsonScalar(s string) (string, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if strings.HasPrefix(s, lit) {
			return s[len(lit):], true
		}
	}
	if s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return s, false
	}
	i := 1
	for i < len(s) && isNumberByte(s[i]) {
		i++
	}
	if i == 1 && s[0] == '-' {
		return s, false
	}
	return s[i:], true
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

// skipJSONSpace skips the white space JSON allows between tokens.
func skipJSONSpace(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\n' || s[0] == '\t' || s[0] == '\r') {
		s = s[1:]
	}
	return s
}
