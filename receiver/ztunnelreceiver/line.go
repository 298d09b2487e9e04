package ztunnelreceiver

import (
	"unsafe"

	"github.com/valyala/fastjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// line holds the fields of one ztunnel log line that the receiver reads. ztunnel
// writes flat JSON whose keys contain literal dots ("src.addr"); unknown keys are
// ignored, so that a newer ztunnel with more fields still parses.
type line struct {
	Time, Message, Direction, Duration, Error, Policy string
	SrcAddr, SrcWorkload, SrcNamespace, SrcIdentity   string
	DstAddr, DstHboneAddr, DstWorkload, DstNamespace  string
	DstIdentity                                       string
	Inbound                                           struct{ Peer string }
}

// parsers are reused: a fastjson parser keeps its buffers between lines.
var parsers fastjson.ParserPool

// maxFields bounds the fields a line gives: the fields of line, once each.
const maxFields = 20

// decodeJSON fills l from one ztunnel JSON line; fields the line does not have
// keep their value, so that attributes read before stay when the body lacks them.
// A field of another type than expected (a number for a string) is ignored, as
// the format is documented as unstable. The values are copied into one string,
// whose parts the fields then are: one allocation a line, not one a field.
// scanJSON reads the common lines for less; this reads every line.
func (l *line) decodeJSON(s string) error {
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.Parse(s)
	if err != nil {
		return err
	}
	o, err := v.Object()
	if err != nil {
		return err
	}
	var found [maxFields]struct {
		dst *string
		val []byte
	}
	n, total := 0, 0
	take := func(dst *string, v *fastjson.Value) {
		if dst == nil || v.Type() != fastjson.TypeString || n == maxFields {
			return
		}
		val := v.GetStringBytes()
		found[n].dst, found[n].val = dst, val
		n, total = n+1, total+len(val)
	}
	o.Visit(func(key []byte, v *fastjson.Value) {
		if string(key) == "inbound" {
			if peer := v.Get("peer"); peer != nil {
				take(&l.Inbound.Peer, peer)
			}
			return
		}
		take(l.field(string(key)), v)
	})
	buf := make([]byte, 0, total)
	for _, f := range found[:n] {
		buf = append(buf, f.val...)
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) //nolint:gosec // G103: buf is never written again, so the string stays immutable.
	off := 0
	for _, f := range found[:n] {
		*f.dst = all[off : off+len(f.val)]
		off += len(f.val)
	}
	return nil
}

// decodeMap fills l from an OTLP map: a kvlist body or the log attributes, as
// fluent-bit sends a record that a parser has already split into fields. The
// inbound span may be a nested map or a flat "inbound.peer" key.
func (l *line) decodeMap(m pcommon.Map) {
	m.Range(func(k string, v pcommon.Value) bool {
		if k == "inbound" && v.Type() == pcommon.ValueTypeMap {
			if p, ok := v.Map().Get("peer"); ok {
				l.Inbound.Peer = p.AsString()
			}
			return true
		}
		if f := l.field(k); f != nil {
			*f = v.AsString()
		}
		return true
	})
}

// field returns the field of l that holds key, or nil for a key the receiver does
// not read.
func (l *line) field(key string) *string {
	switch key {
	case "time":
		return &l.Time
	case "message":
		return &l.Message
	case "direction":
		return &l.Direction
	case "duration":
		return &l.Duration
	case "error":
		return &l.Error
	case "policy":
		return &l.Policy
	case "src.addr":
		return &l.SrcAddr
	case "src.workload":
		return &l.SrcWorkload
	case "src.namespace":
		return &l.SrcNamespace
	case "src.identity":
		return &l.SrcIdentity
	case "dst.addr":
		return &l.DstAddr
	case "dst.hbone_addr":
		return &l.DstHboneAddr
	case "dst.workload":
		return &l.DstWorkload
	case "dst.namespace":
		return &l.DstNamespace
	case "dst.identity":
		return &l.DstIdentity
	case "inbound.peer":
		return &l.Inbound.Peer
	}
	return nil
}
