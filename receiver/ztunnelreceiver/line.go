package ztunnelreceiver

import (
	"github.com/goccy/go-json"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// line holds the fields of one ztunnel log line that the receiver reads. ztunnel
// writes flat JSON whose keys contain literal dots; unknown keys are ignored, so
// that a newer ztunnel with more fields still parses.
type line struct {
	Time         string `json:"time"`
	Message      string `json:"message"`
	Direction    string `json:"direction"`
	Duration     string `json:"duration"`
	Error        string `json:"error"`
	Policy       string `json:"policy"`
	SrcAddr      string `json:"src.addr"`
	SrcWorkload  string `json:"src.workload"`
	SrcNamespace string `json:"src.namespace"`
	SrcIdentity  string `json:"src.identity"`
	DstAddr      string `json:"dst.addr"`
	DstHboneAddr string `json:"dst.hbone_addr"`
	DstWorkload  string `json:"dst.workload"`
	DstNamespace string `json:"dst.namespace"`
	DstIdentity  string `json:"dst.identity"`
	Inbound      struct {
		Peer string `json:"peer"`
	} `json:"inbound"`
}

// decodeJSON fills l from one ztunnel JSON line; fields the line does not have
// keep their value, so that attributes read before stay when the body lacks them.
func (l *line) decodeJSON(b []byte) error {
	return json.Unmarshal(b, l)
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
