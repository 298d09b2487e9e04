package flow

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxTemplates bounds the templates kept. A data plane fills its records
// alike, so a few dozen shapes cover all records; the bound only keeps odd
// input from growing the cache without end.
const maxTemplates = 256

// templates holds, for each record shape seen, an attribute map with the
// shape's keys in slot order and values of the slots' types. Several
// receivers write records at once: a template is only read once stored.
var templates struct {
	m sync.Map // shape -> pcommon.Map
	n atomic.Int32
}

// templateOf returns the template of shape s, building it the first time. Past
// maxTemplates it builds a template for the one record, which costs about as
// much as writing the record's attributes key by key.
func templateOf(s shape) pcommon.Map {
	if t, ok := templates.m.Load(s); ok {
		return t.(pcommon.Map)
	}
	t := newTemplate(s)
	if templates.n.Load() >= maxTemplates {
		return t
	}
	stored, loaded := templates.m.LoadOrStore(s, t)
	if !loaded {
		templates.n.Add(1)
	}
	return stored.(pcommon.Map)
}

func newTemplate(s shape) pcommon.Map {
	t := pcommon.NewMap()
	t.EnsureCapacity(bits.OnesCount64(uint64(s)))
	for i := range numSlots {
		if s&(1<<i) == 0 {
			continue
		}
		if intSlots&(1<<i) != 0 {
			t.PutInt(slotKeys[i], 0)
		} else {
			t.PutStr(slotKeys[i], "")
		}
	}
	return t
}
