package leaderreceiver

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// duplicateLimit bounds each generation: past it the generation turns early,
// which at worst lets a resent candidate through.
const duplicateLimit = 1 << 20

// duplicates remembers the violation candidates accepted within the last one
// to two windows, by identity: the hash of the record's timestamp, event name
// and attributes. A reader that takes over a node may send again a few
// candidates that the node's previous reader sent; the leader keeps one.
// It is safe for concurrent use: a request claims its candidates before it
// hands them on, so that two requests that carry the same candidate at the
// same time cannot both pass.
type duplicates struct {
	window time.Duration
	seed   maphash.Seed

	mu                sync.Mutex
	since             time.Time
	current, previous map[uint64]struct{}
	// inflight are the candidates claimed by requests that the pipeline has
	// not answered yet.
	inflight map[uint64]struct{}
}

func newDuplicates(window time.Duration) *duplicates {
	return &duplicates{window: window, seed: maphash.MakeSeed(), current: map[uint64]struct{}{}, inflight: map[uint64]struct{}{}}
}

// claim reports whether a request may hand on the candidate of identity id at
// now: it was not accepted within the window and no other request holds it.
// A claimed candidate is held until settle.
func (d *duplicates) claim(id uint64, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.turn(now)
	if _, ok := d.current[id]; ok {
		return false
	}
	if _, ok := d.previous[id]; ok {
		return false
	}
	if _, ok := d.inflight[id]; ok {
		return false
	}
	d.inflight[id] = struct{}{}
	return true
}

// settle ends the claims of ids: accepted, they are duplicates from now on;
// refused by the pipeline, their sender sends them again, and that request
// may claim them.
func (d *duplicates) settle(ids []uint64, accepted bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		delete(d.inflight, id)
		if accepted {
			d.turn(now)
			d.current[id] = struct{}{}
		}
	}
}

// turn starts a new generation when the current one is a window old or full;
// after two windows without a candidate the previous one is stale as well.
func (d *duplicates) turn(now time.Time) {
	gap := now.Sub(d.since)
	if gap < d.window && len(d.current) < duplicateLimit {
		return
	}
	d.previous = d.current
	if gap >= 2*d.window {
		d.previous = nil
	}
	d.current = make(map[uint64]struct{}, len(d.current))
	d.since = now
}

// identity hashes what makes a candidate itself: its timestamp, event name
// and every attribute, in key order. keys is scratch space.
func (d *duplicates) identity(lr plog.LogRecord, keys *[]string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	var num [8]byte
	binary.LittleEndian.PutUint64(num[:], uint64(lr.Timestamp()))
	_, _ = h.Write(num[:])
	writeString(&h, lr.EventName())
	attrs := lr.Attributes()
	*keys = (*keys)[:0]
	for k := range attrs.All() {
		*keys = append(*keys, k)
	}
	slices.Sort(*keys)
	for _, k := range *keys {
		v, _ := attrs.Get(k)
		writeString(&h, k)
		_ = h.WriteByte(byte(v.Type()))
		switch v.Type() {
		case pcommon.ValueTypeStr:
			writeString(&h, v.Str())
		case pcommon.ValueTypeInt:
			binary.LittleEndian.PutUint64(num[:], uint64(v.Int()))
			_, _ = h.Write(num[:])
		case pcommon.ValueTypeDouble:
			binary.LittleEndian.PutUint64(num[:], math.Float64bits(v.Double()))
			_, _ = h.Write(num[:])
		default:
			writeString(&h, v.AsString())
		}
	}
	return h.Sum64()
}

// writeString writes s length-prefixed, so that no two attribute lists hash
// alike by where their strings end.
func writeString(h *maphash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	_, _ = h.WriteString(s)
}
