package flow

import (
	"strings"
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
	// Names are the DNS names that the data plane knows the end by (Hubble's
	// source_names/destination_names, from the agent's FQDN cache, filled only
	// when the lookup went through Cilium's DNS proxy); empty for most ends.
	// They are what a policy can name an end outside the cluster by.
	Names []string
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
	var a attrValues
	a.collect(r)
	a.writeAttributes(lr.Attributes())
}

// ReadFrom fills r from a log record written by WriteTo. It reads the attributes
// in one pass: looking each key up would scan the map once per field.
func (r *Record) ReadFrom(lr plog.LogRecord) { r.read(lr, true) }

// ReadSkippingLabels is ReadFrom for a reader that has no use for the ends' pod
// labels: splitting them is the only part of reading a record that allocates,
// besides the ends' DNS names, which it still reads: learning names an outside
// end by them, and few ends have any.
func (r *Record) ReadSkippingLabels(lr plog.LogRecord) { r.read(lr, false) }

func (r *Record) read(lr plog.LogRecord, labels bool) {
	*r = Record{Time: lr.Timestamp().AsTime()}
	lr.Attributes().Range(func(k string, v pcommon.Value) bool {
		if f := r.stringField(k); f != nil {
			*f = v.AsString()
			return true
		}
		switch k {
		case AttrCount:
			r.Count = v.Int()
		case sourceKeys.port:
			r.Source.Port = uint32(v.Int())
		case destinationKeys.port:
			r.Destination.Port = uint32(v.Int())
		case sourceKeys.labels:
			if labels {
				r.Source.Labels = readList(v)
			}
		case destinationKeys.labels:
			if labels {
				r.Destination.Labels = readList(v)
			}
		case sourceKeys.names:
			r.Source.Names = readList(v)
		case destinationKeys.names:
			r.Destination.Names = readList(v)
		}
		return true
	})
}

// stringField returns the string field of r that the attribute key holds.
func (r *Record) stringField(k string) *string {
	switch k {
	case AttrProvider:
		return (*string)(&r.Provider)
	case AttrOutcome:
		return (*string)(&r.Outcome)
	case AttrPendingOutcome:
		return (*string)(&r.PendingOutcome)
	case AttrReporter:
		return (*string)(&r.Reporter)
	case AttrDirection:
		return (*string)(&r.Direction)
	case AttrTransport:
		return (*string)(&r.Transport)
	case AttrPolicyKind:
		return &r.Policy.Kind
	case AttrPolicyNamespace:
		return &r.Policy.Namespace
	case AttrPolicyName:
		return &r.Policy.Name
	case AttrPendingPolicyKind:
		return &r.PendingPolicy.Kind
	case AttrPendingPolicyNamespace:
		return &r.PendingPolicy.Namespace
	case AttrPendingPolicyName:
		return &r.PendingPolicy.Name
	}
	if f := r.Source.stringField(&sourceKeys, k); f != nil {
		return f
	}
	return r.Destination.stringField(&destinationKeys, k)
}

func (e *Endpoint) stringField(keys *endKeys, k string) *string {
	switch k {
	case keys.address:
		return &e.Address
	case keys.namespace:
		return &e.Namespace
	case keys.pod:
		return &e.Pod
	case keys.workloadKind:
		return &e.WorkloadKind
	case keys.workloadName:
		return &e.WorkloadName
	case keys.identity:
		return &e.Identity
	case keys.external:
		return (*string)(&e.External)
	}
	return nil
}

// readList reads an end's labels or DNS names: one string joined by
// LabelSeparator, or, as records of earlier versions have the labels, a slice.
func readList(v pcommon.Value) []string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if v.Str() == "" {
			return nil
		}
		return strings.Split(v.Str(), LabelSeparator)
	case pcommon.ValueTypeSlice:
	default:
		return nil
	}
	s := v.Slice()
	out := make([]string, 0, s.Len())
	for i := range s.Len() {
		out = append(out, s.At(i).AsString())
	}
	return out
}
