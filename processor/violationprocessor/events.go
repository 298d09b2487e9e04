package violationprocessor

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// appendObserved appends the event of an observation.
func appendObserved(sl plog.ScopeLogs, o *observation) {
	r := o.key.record(o.time)
	lr := violationevent.Append(sl, violationevent.Observed, o.provider, &r, o.time)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	lr.Body().SetStr(fmt.Sprintf("%s violation of %s/%s: %s to %s on %s/%d",
		r.Action, r.Policy.Namespace, r.Policy.Name, describe(&r.Source), describe(&r.Destination), r.Protocol, r.DstPort))
}

// appendAcknowledged appends the event of an acknowledgement.
func appendAcknowledged(sl plog.ScopeLogs, provider flow.Provider, a *v1alpha1.AcknowledgedViolation) {
	r := &a.Violation
	lr := violationevent.Append(sl, violationevent.Acknowledged, provider, r, a.AcknowledgedAt.Time)
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.SetSeverityText("INFO")
	lr.Attributes().PutStr(violationevent.AttrViolationID, r.ID)
	lr.Attributes().PutStr(violationevent.AttrReason, a.Reason)
	lr.Body().SetStr(fmt.Sprintf("violation %s of %s/%s acknowledged: %s", r.ID, r.Policy.Namespace, r.Policy.Name, a.Reason))
}

func describe(e *v1alpha1.ViolationEndpoint) string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Kind + "/" + e.Name
}
