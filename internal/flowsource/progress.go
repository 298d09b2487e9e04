package flowsource

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// ProgressEventName names the record that closes a marked batch, one for each
// of its marks: everything of that key's input up to the record's timestamp
// is in the batch or before it. It travels with the learned records to the
// leader, which takes the batch whole and then knows how far it counted each
// key; the processors hand it on untouched, as a record not theirs.
const ProgressEventName = "network_enforcer.flow_source.progress"

// AttrProgressKey is the progress record's key: the input (a Cilium node)
// whose progress it carries.
const AttrProgressKey = "network_enforcer.flow_source.key"

// WriteProgress writes m as a progress record into lr.
func WriteProgress(lr plog.LogRecord, m Mark) {
	lr.SetEventName(ProgressEventName)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(m.Time))
	lr.Attributes().PutStr(AttrProgressKey, m.Key)
}

// ReadProgress reads a progress record; false for any other record, or one
// without a key or a time.
func ReadProgress(lr plog.LogRecord) (Mark, bool) {
	if lr.EventName() != ProgressEventName || lr.Timestamp() == 0 {
		return Mark{}, false
	}
	k, ok := lr.Attributes().Get(AttrProgressKey)
	if !ok || k.Type() != pcommon.ValueTypeStr || k.Str() == "" {
		return Mark{}, false
	}
	return Mark{Key: k.Str(), Time: lr.Timestamp().AsTime()}, true
}
