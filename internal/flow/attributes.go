package flow

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// slot is an attribute's place in the order in which WriteTo writes a
// record's attributes. The order is the schema's; readers do not depend on it,
// but keeping it keeps records byte for byte as they were.
type slot uint8

const (
	slotProvider slot = iota
	slotOutcome
	slotPendingOutcome
	slotReporter
	slotDirection
	slotTransport
	slotCount
	slotPolicyKind
	slotPolicyNamespace
	slotPolicyName
	slotPendingPolicyKind
	slotPendingPolicyNamespace
	slotPendingPolicyName
	slotSource      // the first of an end's endSlots slots
	slotDestination = slotSource + endSlots
	numSlots        = slotDestination + endSlots
)

// An end's slots, from its first.
const (
	endAddress slot = iota
	endPort
	endNamespace
	endPod
	endWorkloadKind
	endWorkloadName
	endIdentity
	endLabels
	endNames
	endExternal
	endSlots
)

// slotKeys are the attribute keys of the slots.
var slotKeys = func() (k [numSlots]string) {
	copy(k[:], []string{
		AttrProvider, AttrOutcome, AttrPendingOutcome, AttrReporter, AttrDirection, AttrTransport, AttrCount,
		AttrPolicyKind, AttrPolicyNamespace, AttrPolicyName,
		AttrPendingPolicyKind, AttrPendingPolicyNamespace, AttrPendingPolicyName,
	})
	sourceKeys.inSlotOrder(k[slotSource:slotDestination])
	destinationKeys.inSlotOrder(k[slotDestination:])
	return k
}()

// inSlotOrder puts the keys of an end into to, in the order of its slots.
func (keys *endKeys) inSlotOrder(to []string) {
	copy(to, []string{keys.address, keys.port, keys.namespace, keys.pod,
		keys.workloadKind, keys.workloadName, keys.identity, keys.labels, keys.names, keys.external})
}

// intSlots are the slots whose values are ints; the others' are strings.
const intSlots shape = 1<<slotCount | 1<<(slotSource+endPort) | 1<<(slotDestination+endPort)

// shape says which slots a record fills: bit s for slot s.
type shape uint64

// A slot past shape's bits would be left out of every record without a word:
// this stops compiling first.
const _ = 64 - numSlots

// attrValue is the value of one attribute: s for a string slot, n for an int one.
type attrValue struct {
	s string
	n int64
}

// attrValues are the attributes of a record, in slot order, and the shape
// that says whose they are.
type attrValues struct {
	shape shape
	n     int
	v     [numSlots]attrValue
}

// str fills slot s with v, leaving an empty value out: absent means unknown.
// Slots are filled in their order, so that v lands at its place in the map.
func (a *attrValues) str(s slot, v string) {
	if v == "" {
		return
	}
	a.shape |= 1 << s
	a.v[a.n].s = v
	a.n++
}

func (a *attrValues) int(s slot, v int64) {
	a.shape |= 1 << s
	a.v[a.n].n = v
	a.n++
}

// collect gathers r's attributes in slot order.
func (a *attrValues) collect(r *Record) {
	a.str(slotProvider, string(r.Provider))
	a.str(slotOutcome, string(r.Outcome))
	a.str(slotPendingOutcome, string(r.PendingOutcome))
	a.str(slotReporter, string(r.Reporter))
	a.str(slotDirection, string(r.Direction))
	a.str(slotTransport, string(r.Transport))
	a.int(slotCount, max(r.Count, 1))
	a.policy(slotPolicyKind, r.Policy)
	a.policy(slotPendingPolicyKind, r.PendingPolicy)
	a.endpoint(slotSource, &r.Source)
	a.endpoint(slotDestination, &r.Destination)
}

func (a *attrValues) policy(first slot, p PolicyRef) {
	a.str(first, p.Kind)
	a.str(first+1, p.Namespace)
	a.str(first+2, p.Name)
}

func (a *attrValues) endpoint(first slot, e *Endpoint) {
	a.str(first+endAddress, e.Address)
	if e.Port != 0 {
		a.int(first+endPort, int64(e.Port))
	}
	a.str(first+endNamespace, e.Namespace)
	a.str(first+endPod, e.Pod)
	a.str(first+endWorkloadKind, e.WorkloadKind)
	a.str(first+endWorkloadName, e.WorkloadName)
	a.str(first+endIdentity, e.Identity)
	a.list(first+endLabels, e.Labels)
	a.list(first+endNames, e.Names)
	a.str(first+endExternal, string(e.External))
}

// list fills slot s with l joined by LabelSeparator: one string, not a slice,
// for a slice value costs an allocation an item.
func (a *attrValues) list(s slot, l []string) {
	switch len(l) {
	case 0:
	case 1:
		a.str(s, l[0])
	default:
		a.str(s, strings.Join(l, LabelSeparator))
	}
}

// writeAttributes replaces m's entries with a's. It copies the template of a's
// shape, which has the keys in order, and then sets each value in place:
// pcommon.Map's Put looks its key up among those already there, some three
// hundred key compares for a record's two dozen attributes. Setting a value of
// the template's type reuses the value the copy made, so this allocates no
// more than Put.
func (a *attrValues) writeAttributes(m pcommon.Map) {
	templateOf(a.shape).CopyTo(m)
	i := 0
	for _, v := range m.All() {
		if v.Type() == pcommon.ValueTypeInt {
			v.SetInt(a.v[i].n)
		} else {
			v.SetStr(a.v[i].s)
		}
		i++
	}
}
