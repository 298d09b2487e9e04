package flow

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// writeByPut is how WriteTo wrote a record's attributes before templates: one
// Put a key, each looking its key up among those before it. The tests hold
// WriteTo to its output, and the benchmarks measure WriteTo against it.
func (r *Record) writeByPut(lr plog.LogRecord) {
	lr.SetEventName(EventName)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(r.Time))
	if r.Outcome == OutcomeAllowed {
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
	} else {
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
	}
	a := lr.Attributes()
	if a.Len() > 0 {
		a.Clear()
	}
	a.EnsureCapacity(r.attributeCount())
	putStr(a, AttrProvider, string(r.Provider))
	putStr(a, AttrOutcome, string(r.Outcome))
	putStr(a, AttrPendingOutcome, string(r.PendingOutcome))
	putStr(a, AttrReporter, string(r.Reporter))
	putStr(a, AttrDirection, string(r.Direction))
	putStr(a, AttrTransport, string(r.Transport))
	a.PutInt(AttrCount, max(r.Count, 1))
	writePolicy(a, AttrPolicyKind, AttrPolicyNamespace, AttrPolicyName, r.Policy)
	writePolicy(a, AttrPendingPolicyKind, AttrPendingPolicyNamespace, AttrPendingPolicyName, r.PendingPolicy)
	writeEndpoint(a, &sourceKeys, &r.Source)
	writeEndpoint(a, &destinationKeys, &r.Destination)
}

func writeEndpoint(a pcommon.Map, k *endKeys, e *Endpoint) {
	putStr(a, k.address, e.Address)
	if e.Port != 0 {
		a.PutInt(k.port, int64(e.Port))
	}
	putStr(a, k.namespace, e.Namespace)
	putStr(a, k.pod, e.Pod)
	putStr(a, k.workloadKind, e.WorkloadKind)
	putStr(a, k.workloadName, e.WorkloadName)
	putStr(a, k.identity, e.Identity)
	putList(a, k.labels, e.Labels)
	putList(a, k.names, e.Names)
	putStr(a, k.external, string(e.External))
}

func putList(a pcommon.Map, key string, l []string) {
	switch len(l) {
	case 0:
	case 1:
		a.PutStr(key, l[0])
	default:
		a.PutStr(key, strings.Join(l, LabelSeparator))
	}
}

func writePolicy(a pcommon.Map, kind, ns, name string, p PolicyRef) {
	putStr(a, kind, p.Kind)
	putStr(a, ns, p.Namespace)
	putStr(a, name, p.Name)
}

func putStr(a pcommon.Map, key, v string) {
	if v != "" {
		a.PutStr(key, v)
	}
}

// attributeCount is the number of attributes WriteTo writes, so that the map is
// allocated once at its size: the attribute map is most of the cost of a record.
func (r *Record) attributeCount() int {
	n := 1 // flow.count
	for _, v := range [...]string{
		string(r.Provider), string(r.Outcome), string(r.PendingOutcome), string(r.Reporter),
		string(r.Direction), string(r.Transport),
		r.Policy.Kind, r.Policy.Namespace, r.Policy.Name,
		r.PendingPolicy.Kind, r.PendingPolicy.Namespace, r.PendingPolicy.Name,
	} {
		if v != "" {
			n++
		}
	}
	return n + r.Source.attributeCount() + r.Destination.attributeCount()
}

func (e *Endpoint) attributeCount() int {
	n := 0
	for _, v := range [...]string{e.Address, e.Namespace, e.Pod, e.WorkloadKind, e.WorkloadName, e.Identity, string(e.External)} {
		if v != "" {
			n++
		}
	}
	if e.Port != 0 {
		n++
	}
	if len(e.Labels) > 0 {
		n++
	}
	if len(e.Names) > 0 {
		n++
	}
	return n
}
