// Package violationevent is the one owner of the violation events' schema: the
// event names and attribute keys that the violation processor writes and that
// the policy_denies connector (and any OTLP backend) reads.
package violationevent

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
)

// The event names.
const (
	// Observed is sent at once for each violation observation.
	Observed = "policy_violation_observed"
	// Acknowledged is sent when an acknowledgement has moved a record to
	// status.acknowledgedViolations.
	Acknowledged = "policy_violation_acknowledged"
)

// Attribute keys of both events.
const (
	AttrProvider               = flow.AttrProvider
	AttrAction                 = "action"
	AttrTransport              = flow.AttrTransport
	AttrSourceNamespace        = "source.workload.namespace"
	AttrSourceKind             = "source.workload.kind"
	AttrSourceName             = "source.workload.name"
	AttrSourceIdentity         = "source.workload.identity"
	AttrDestinationNamespace   = "destination.workload.namespace"
	AttrDestinationKind        = "destination.workload.kind"
	AttrDestinationName        = "destination.workload.name"
	AttrDestinationIdentity    = "destination.workload.identity"
	AttrDestinationPort        = "destination.port"
	AttrPolicyNamespace        = flow.AttrPolicyNamespace
	AttrPolicyName             = flow.AttrPolicyName
	attributeCount             = 25
	acknowledgedAttributeCount = attributeCount + 2
)

// Attribute keys of what an end is, beside its workload: its class, and for
// a peer that is not a workload its address, DNS name and entity, as the
// policy's observed edges name it. Each is there when the record has it.
const (
	AttrSourceClass        = "source.class"
	AttrSourceAddress      = "source.address"
	AttrSourceDNSName      = "source.dns.name"
	AttrSourceEntity       = "source.entity"
	AttrDestinationClass   = "destination.class"
	AttrDestinationAddress = "destination.address"
	AttrDestinationDNSName = "destination.dns.name"
	AttrDestinationEntity  = "destination.entity"
	// AttrSourceRevision and AttrDestinationRevision are the revision of the
	// workload whose pod the end was (its ReplicaSet, ControllerRevision, or
	// CronJob template): which release made the flow.
	AttrSourceRevision      = "source.workload.revision"
	AttrDestinationRevision = "destination.workload.revision"
)

// Attribute keys of Acknowledged events only.
const (
	AttrViolationID = "violation.id"
	AttrReason      = "violation.acknowledgement.reason"
)

// Append appends an event named name about record r of a policy to sl, with
// every attribute of the schema; provider may be empty.
func Append(sl plog.ScopeLogs, name string, provider flow.Provider, r *v1alpha1.ViolationRecord, ts time.Time) plog.LogRecord {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetEventName(name)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	a := lr.Attributes()
	if name == Acknowledged {
		a.EnsureCapacity(acknowledgedAttributeCount)
	} else {
		a.EnsureCapacity(attributeCount)
	}
	if provider != "" {
		a.PutStr(AttrProvider, string(provider))
	}
	a.PutStr(AttrAction, string(r.Action))
	a.PutStr(AttrSourceNamespace, r.Source.Namespace)
	a.PutStr(AttrSourceKind, r.Source.Kind)
	a.PutStr(AttrSourceName, r.Source.Name)
	a.PutStr(AttrSourceIdentity, r.Source.Identity)
	a.PutStr(AttrDestinationNamespace, r.Destination.Namespace)
	a.PutStr(AttrDestinationKind, r.Destination.Kind)
	a.PutStr(AttrDestinationName, r.Destination.Name)
	a.PutStr(AttrDestinationIdentity, r.Destination.Identity)
	a.PutStr(AttrTransport, strings.ToLower(string(r.Protocol)))
	a.PutInt(AttrDestinationPort, int64(r.DstPort))
	a.PutStr(AttrPolicyNamespace, r.Policy.Namespace)
	a.PutStr(AttrPolicyName, r.Policy.Name)
	putEnd(a, &r.Source, AttrSourceClass, AttrSourceAddress, AttrSourceDNSName, AttrSourceEntity, AttrSourceRevision)
	putEnd(a, &r.Destination, AttrDestinationClass, AttrDestinationAddress, AttrDestinationDNSName, AttrDestinationEntity, AttrDestinationRevision)
	return lr
}

// putEnd puts what end e is under the keys given, each that it has.
func putEnd(a pcommon.Map, e *v1alpha1.ViolationEndpoint, class, address, dnsName, entity, revision string) {
	for _, kv := range [...]struct{ k, v string }{
		{class, string(e.Class)}, {address, e.Address}, {dnsName, e.DNSName}, {entity, string(e.Entity)}, {revision, e.Revision},
	} {
		if kv.v != "" {
			a.PutStr(kv.k, kv.v)
		}
	}
}
