package flow

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Endpoint is one end of a flow.
type Endpoint struct {
	Address string
	Port    uint32
	// Namespace and Pod name the pod. Pod may be an aggregated name ending in "*"
	// (Goldmane's "<generateName>*"), resolved to pods later.
	Namespace string
	Pod       string
	// WorkloadKind and WorkloadName are set when the data plane knows the owner.
	WorkloadKind string
	WorkloadName string
	// Identity is the end's identity as the data plane gives it: an Istio principal
	// (without spiffe://) or a Cilium security identity.
	Identity string
	// Labels are the pod labels as "key=value", when the data plane gives them.
	Labels []string
	// External is set when the end is not a pod of the cluster.
	External External
}

// PolicyRef names a data plane policy.
type PolicyRef struct {
	Kind      string
	Namespace string
	Name      string
}

// IsZero reports whether no policy is named.
func (p PolicyRef) IsZero() bool { return p == PolicyRef{} }

// Record is one flow in the shared schema.
type Record struct {
	Time      time.Time
	Provider  Provider
	Outcome   Outcome
	Reporter  Reporter
	Direction Direction
	Transport Transport

	Source      Endpoint
	Destination Endpoint

	// Policy is the policy that decided the flow (the denying one for a denied
	// flow), when the data plane names it.
	Policy PolicyRef
	// PendingOutcome and PendingPolicy are what staged (not yet enforced) policies
	// would do with the flow, when the data plane evaluates them.
	PendingOutcome Outcome
	PendingPolicy  PolicyRef

	// Count is how many connections the record stands for, when the data plane
	// aggregates; 1 otherwise.
	Count int64
}

// AppendTo appends r as a log record to sl.
func (r *Record) AppendTo(sl plog.ScopeLogs) {
	lr := sl.LogRecords().AppendEmpty()
	r.WriteTo(lr)
}

// WriteTo writes r into lr, replacing lr's attributes.
func (r *Record) WriteTo(lr plog.LogRecord) {
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
	count := r.Count
	if count < 1 {
		count = 1
	}
	a.PutInt(AttrCount, count)
	writePolicy(a, AttrPolicyKind, AttrPolicyNamespace, AttrPolicyName, r.Policy)
	writePolicy(a, AttrPendingPolicyKind, AttrPendingPolicyNamespace, AttrPendingPolicyName, r.PendingPolicy)
	writeEndpoint(a, &sourceKeys, &r.Source)
	writeEndpoint(a, &destinationKeys, &r.Destination)
}

// ReadFrom fills r from a log record written by WriteTo.
func (r *Record) ReadFrom(lr plog.LogRecord) {
	a := lr.Attributes()
	*r = Record{
		Time:           lr.Timestamp().AsTime(),
		Provider:       Provider(getStr(a, AttrProvider)),
		Outcome:        Outcome(getStr(a, AttrOutcome)),
		PendingOutcome: Outcome(getStr(a, AttrPendingOutcome)),
		Reporter:       Reporter(getStr(a, AttrReporter)),
		Direction:      Direction(getStr(a, AttrDirection)),
		Transport:      Transport(getStr(a, AttrTransport)),
		Policy:         readPolicy(a, AttrPolicyKind, AttrPolicyNamespace, AttrPolicyName),
		PendingPolicy:  readPolicy(a, AttrPendingPolicyKind, AttrPendingPolicyNamespace, AttrPendingPolicyName),
		Source:         readEndpoint(a, &sourceKeys),
		Destination:    readEndpoint(a, &destinationKeys),
	}
	if v, ok := a.Get(AttrCount); ok {
		r.Count = v.Int()
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
	return n
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
	if len(e.Labels) > 0 {
		s := a.PutEmptySlice(k.labels)
		s.EnsureCapacity(len(e.Labels))
		for _, l := range e.Labels {
			s.AppendEmpty().SetStr(l)
		}
	}
	putStr(a, k.external, string(e.External))
}

func readEndpoint(a pcommon.Map, k *endKeys) Endpoint {
	e := Endpoint{
		Address:      getStr(a, k.address),
		Namespace:    getStr(a, k.namespace),
		Pod:          getStr(a, k.pod),
		WorkloadKind: getStr(a, k.workloadKind),
		WorkloadName: getStr(a, k.workloadName),
		Identity:     getStr(a, k.identity),
		External:     External(getStr(a, k.external)),
	}
	if v, ok := a.Get(k.port); ok {
		e.Port = uint32(v.Int())
	}
	if v, ok := a.Get(k.labels); ok && v.Type() == pcommon.ValueTypeSlice {
		s := v.Slice()
		for i := range s.Len() {
			e.Labels = append(e.Labels, s.At(i).AsString())
		}
	}
	return e
}

func writePolicy(a pcommon.Map, kind, ns, name string, p PolicyRef) {
	putStr(a, kind, p.Kind)
	putStr(a, ns, p.Namespace)
	putStr(a, name, p.Name)
}

func readPolicy(a pcommon.Map, kind, ns, name string) PolicyRef {
	return PolicyRef{Kind: getStr(a, kind), Namespace: getStr(a, ns), Name: getStr(a, name)}
}

// putStr sets a string attribute, leaving empty values out: absent means unknown.
func putStr(a pcommon.Map, key, v string) {
	if v != "" {
		a.PutStr(key, v)
	}
}

func getStr(a pcommon.Map, key string) string {
	if v, ok := a.Get(key); ok {
		return v.AsString()
	}
	return ""
}
