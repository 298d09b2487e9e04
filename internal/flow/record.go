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
	a.Clear()
	a.EnsureCapacity(24)
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
	writeEndpoint(a, prefixSource, &r.Source)
	writeEndpoint(a, prefixDestination, &r.Destination)
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
		Source:         readEndpoint(a, prefixSource),
		Destination:    readEndpoint(a, prefixDestination),
	}
	if v, ok := a.Get(AttrCount); ok {
		r.Count = v.Int()
	}
}

func writeEndpoint(a pcommon.Map, prefix string, e *Endpoint) {
	putStr(a, prefix+suffixAddress, e.Address)
	if e.Port != 0 {
		a.PutInt(prefix+suffixPort, int64(e.Port))
	}
	putStr(a, prefix+suffixNamespace, e.Namespace)
	putStr(a, prefix+suffixPod, e.Pod)
	putStr(a, prefix+suffixWorkloadKind, e.WorkloadKind)
	putStr(a, prefix+suffixWorkloadName, e.WorkloadName)
	putStr(a, prefix+suffixIdentity, e.Identity)
	if len(e.Labels) > 0 {
		s := a.PutEmptySlice(prefix + suffixLabels)
		s.EnsureCapacity(len(e.Labels))
		for _, l := range e.Labels {
			s.AppendEmpty().SetStr(l)
		}
	}
	putStr(a, prefix+suffixExternal, string(e.External))
}

func readEndpoint(a pcommon.Map, prefix string) Endpoint {
	e := Endpoint{
		Address:      getStr(a, prefix+suffixAddress),
		Namespace:    getStr(a, prefix+suffixNamespace),
		Pod:          getStr(a, prefix+suffixPod),
		WorkloadKind: getStr(a, prefix+suffixWorkloadKind),
		WorkloadName: getStr(a, prefix+suffixWorkloadName),
		Identity:     getStr(a, prefix+suffixIdentity),
		External:     External(getStr(a, prefix+suffixExternal)),
	}
	if v, ok := a.Get(prefix + suffixPort); ok {
		e.Port = uint32(v.Int())
	}
	if v, ok := a.Get(prefix + suffixLabels); ok && v.Type() == pcommon.ValueTypeSlice {
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
