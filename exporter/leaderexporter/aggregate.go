package leaderexporter

import (
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// mergeable reports whether a record is merged over the interval: a learned
// edge, an observation, a coverage gap, or a source's progress (one per key,
// the newest), which goes with the records it covers. Everything else
// (violation candidates above all) is sent at once.
func mergeable(lr plog.LogRecord) bool {
	switch lr.EventName() {
	case learning.EventName, learning.ObservationEventName, learning.GapEventName, flowsource.ProgressEventName:
		return true
	}
	return false
}

// keptForResend reports whether a record is kept for a new leader: a learned
// edge, an observation or a progress record, which the writer counts once per
// proposal by the batch's number, or a violation candidate, which the
// violation processor counts once per policy by the same number. A coverage
// gap is sent once, with the first try of its batch, and not again: the
// writer does not count gaps by batch, so a new leader would count them
// twice.
func keptForResend(lr plog.LogRecord) bool {
	if lr.EventName() == learning.CandidateEventName {
		return true
	}
	return mergeable(lr) && lr.EventName() != learning.GapEventName
}

// summed are the attributes that merging adds up instead of keying on:
// flows of an edge, and a gap's lost events and reports.
var summed = []string{learning.AttrFlows, learning.AttrGapEvents, learning.AttrGapReports}

// aggregator holds the learned edges, observations and coverage gaps of an
// interval, one record for each distinct one: records equal in event name and
// every attribute but the summed ones are one, whose flows (a gap's events
// and reports) are summed, whose timestamp is the newest and whose observed
// timestamp the oldest (first seen). It is safe for concurrent use.
type aggregator struct {
	mu      sync.Mutex
	held    map[string]int // key → index in records
	logs    plog.Logs
	records plog.LogRecordSlice
	// key and keys are scratch space for the key of a record.
	key  []byte
	keys []string
}

func newAggregator() *aggregator {
	a := &aggregator{held: map[string]int{}}
	a.reset()
	return a
}

func (a *aggregator) reset() {
	a.logs = plog.NewLogs()
	a.records = a.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	clear(a.held)
}

// addBatch merges the learned edges and observations of ld into what is
// held, all of them at once: an interval never ends in the middle of a batch.
// Each time max distinct records are held, they are taken: addBatch returns
// them, for the caller to hand on.
func (a *aggregator) addBatch(ld plog.Logs, maxHeld int) []plog.Logs {
	a.mu.Lock()
	defer a.mu.Unlock()
	var full []plog.Logs
	// The progress goes in after the records of the batch: a take that
	// max_edges asks for in between must not send the progress ahead of
	// the records that it covers.
	for _, progress := range []bool{false, true} {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if (lr.EventName() == flowsource.ProgressEventName) != progress || !mergeable(lr) {
						continue
					}
					if a.addLocked(lr) >= maxHeld {
						full = append(full, a.takeLocked())
					}
				}
			}
		}
	}
	return full
}

// addLocked merges a copy of lr into what is held and returns how many
// distinct records are held now.
func (a *aggregator) addLocked(lr plog.LogRecord) int {
	a.key = a.keyOf(a.key[:0], lr)
	if i, ok := a.held[string(a.key)]; ok {
		merge(a.records.At(i), lr)
		return len(a.held)
	}
	a.held[string(a.key)] = a.records.Len()
	held := a.records.AppendEmpty()
	lr.CopyTo(held)
	held.SetObservedTimestamp(firstSeen(lr))
	return len(a.held)
}

// merge adds lr to held, a record of the same key.
func merge(held, lr plog.LogRecord) {
	for _, k := range [...]string{learning.AttrFlows, learning.AttrGapEvents} {
		if f, ok := lr.Attributes().Get(k); ok {
			sum := f.Int()
			if h, ok := held.Attributes().Get(k); ok {
				sum = addSaturating(h.Int(), sum)
			}
			held.Attributes().PutInt(k, sum)
		}
	}
	if lr.EventName() == learning.GapEventName {
		// A gap record without the attribute is one report.
		held.Attributes().PutInt(learning.AttrGapReports, addSaturating(reportsOf(held), reportsOf(lr)))
	}
	if ts := lr.Timestamp(); ts > held.Timestamp() {
		held.SetTimestamp(ts)
	}
	if first := firstSeen(lr); first != 0 && (held.ObservedTimestamp() == 0 || first < held.ObservedTimestamp()) {
		held.SetObservedTimestamp(first)
	}
}

// reportsOf is how many reports a gap record stands for.
func reportsOf(lr plog.LogRecord) int64 {
	if v, ok := lr.Attributes().Get(learning.AttrGapReports); ok && v.Type() == pcommon.ValueTypeInt && v.Int() > 1 {
		return v.Int()
	}
	return 1
}

// firstSeen is the older of lr's timestamps that are set: a record that
// merged others carries its first flow's time as its observed timestamp.
func firstSeen(lr plog.LogRecord) pcommon.Timestamp {
	ts, observed := lr.Timestamp(), lr.ObservedTimestamp()
	if observed != 0 && (ts == 0 || observed < ts) {
		return observed
	}
	return ts
}

func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// len returns how many distinct records are held.
func (a *aggregator) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

// take returns what is held, and holds nothing from then on; false when
// nothing is held.
func (a *aggregator) take() (plog.Logs, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.held) == 0 {
		return plog.Logs{}, false
	}
	return a.takeLocked(), true
}

func (a *aggregator) takeLocked() plog.Logs {
	out := a.logs
	a.reset()
	return out
}

// keyOf appends to b the identity of lr: its event name and its attributes
// but the summed ones, sorted by key, each length-prefixed and typed so that no two
// records share a key by accident.
func (a *aggregator) keyOf(b []byte, lr plog.LogRecord) []byte {
	b = appendString(b, lr.EventName())
	attrs := lr.Attributes()
	a.keys = a.keys[:0]
	for k := range attrs.All() {
		if !slices.Contains(summed, k) {
			a.keys = append(a.keys, k)
		}
	}
	slices.Sort(a.keys)
	for _, k := range a.keys {
		v, _ := attrs.Get(k)
		b = appendString(b, k)
		b = appendValue(b, v)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v pcommon.Value) []byte {
	b = append(b, byte(v.Type()))
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendString(b, v.Str())
	case pcommon.ValueTypeInt:
		return binary.AppendVarint(b, v.Int())
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case pcommon.ValueTypeDouble:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Double()))
	default: // maps, slices, bytes: their canonical text
		return appendString(b, v.AsString())
	}
}
