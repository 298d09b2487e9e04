package violationprocessor

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
)

// The events that the processor sends.
const (
	// EventObserved is sent at once for each violation observation.
	EventObserved = "policy_violation_observed"
	// EventAcknowledged is sent when an acknowledgement has moved a record to
	// status.acknowledgedViolations.
	EventAcknowledged = "policy_violation_acknowledged"
)

// Attribute keys of the events.
const (
	AttrProvider        = flow.AttrProvider
	AttrAction          = "action"
	AttrTransport       = flow.AttrTransport
	AttrDestinationPort = "destination.port"
	AttrPolicyNamespace = flow.AttrPolicyNamespace
	AttrPolicyName      = flow.AttrPolicyName
	// AttrViolationID and AttrReason are on acknowledgement events only.
	AttrViolationID = "violation.id"
	AttrReason      = "violation.acknowledgement.reason"
)

// endKeys are the attribute keys of one end of a violation.
type endKeys struct{ namespace, kind, name, identity string }

var (
	sourceKeys      = endKeys{"source.workload.namespace", "source.workload.kind", "source.workload.name", "source.workload.identity"}
	destinationKeys = endKeys{"destination.workload.namespace", "destination.workload.kind", "destination.workload.name", "destination.workload.identity"}
)

// appendEvent appends an event about record r of a policy to sl.
func appendEvent(sl plog.ScopeLogs, name string, provider flow.Provider, r *v1alpha1.ViolationRecord, ts time.Time) plog.LogRecord {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetEventName(name)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	a := lr.Attributes()
	a.EnsureCapacity(15)
	if provider != "" {
		a.PutStr(AttrProvider, string(provider))
	}
	a.PutStr(AttrAction, string(r.Action))
	putEnd(a, &sourceKeys, &r.Source)
	putEnd(a, &destinationKeys, &r.Destination)
	a.PutStr(AttrTransport, transportOf(r.Protocol))
	a.PutInt(AttrDestinationPort, int64(r.DstPort))
	a.PutStr(AttrPolicyNamespace, r.Policy.Namespace)
	a.PutStr(AttrPolicyName, r.Policy.Name)
	return lr
}

// appendObserved appends the event of an observation.
func appendObserved(sl plog.ScopeLogs, o *observation) {
	r := o.key.record(o.time)
	lr := appendEvent(sl, EventObserved, o.provider, &r, o.time)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	lr.Body().SetStr(fmt.Sprintf("%s violation of %s/%s: %s to %s on %s/%d",
		r.Action, r.Policy.Namespace, r.Policy.Name, describe(&r.Source), describe(&r.Destination), r.Protocol, r.DstPort))
}

// appendAcknowledged appends the event of an acknowledgement.
func appendAcknowledged(sl plog.ScopeLogs, provider flow.Provider, a *v1alpha1.AcknowledgedViolation) {
	r := &a.Violation
	lr := appendEvent(sl, EventAcknowledged, provider, r, a.AcknowledgedAt.Time)
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.SetSeverityText("INFO")
	lr.Attributes().PutStr(AttrViolationID, r.ID)
	lr.Attributes().PutStr(AttrReason, a.Reason)
	lr.Body().SetStr(fmt.Sprintf("violation %s of %s/%s acknowledged: %s", r.ID, r.Policy.Namespace, r.Policy.Name, a.Reason))
}

func putEnd(a pcommon.Map, k *endKeys, e *v1alpha1.ViolationEndpoint) {
	a.PutStr(k.namespace, e.Namespace)
	a.PutStr(k.kind, e.Kind)
	a.PutStr(k.name, e.Name)
	a.PutStr(k.identity, e.Identity)
}

func describe(e *v1alpha1.ViolationEndpoint) string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Kind + "/" + e.Name
}
