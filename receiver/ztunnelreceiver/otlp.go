package ztunnelreceiver

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// attrFilePath is the attribute that names the file a record was read from, when
// the sender adds it; it keys the joining of CRI partial lines.
const attrFilePath = "log.file.path"

// newOTLPInput builds the collector's own OTLP receiver for the configured
// listeners, handing every log batch to r.
func newOTLPInput(ctx context.Context, set receiver.Settings, cfg *Config, r *ztunnelReceiver) (component.Component, error) {
	f := otlpreceiver.NewFactory()
	oc := f.CreateDefaultConfig().(*otlpreceiver.Config)
	oc.Protocols.GRPC = cfg.Protocols.GRPC
	if cfg.Protocols.HTTP.HasValue() {
		h := oc.Protocols.HTTP.GetOrInsertDefault()
		h.ServerConfig = *cfg.Protocols.HTTP.Get()
	} else {
		oc.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	}
	// The OTLP receiver checks that it runs under its own type; its telemetry then
	// names it otlp/<this receiver's ID>.
	set.ID = component.NewIDWithName(f.Type(), strings.ReplaceAll(set.ID.String(), "/", "_"))
	return f.CreateLogs(ctx, set, oc, consumerFunc(r.consumeOTLP))
}

// consumerFunc makes a function a consumer.Logs that does not change its input.
type consumerFunc func(context.Context, plog.Logs) error

func (f consumerFunc) ConsumeLogs(ctx context.Context, ld plog.Logs) error { return f(ctx, ld) }

func (consumerFunc) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// consumeOTLP takes a batch as fluent-bit's opentelemetry output sends it: per
// record, the body is the whole ztunnel line (maybe with a CRI prefix), or the
// message with the other fields as attributes, or a kvlist of the whole record.
// Flow records that the node agent forwards pass through.
func (r *ztunnelReceiver) consumeOTLP(ctx context.Context, ld plog.Logs) error {
	if r.leader != nil && !r.leader.IsLeader() {
		r.refused.Add(ctx, int64(ld.LogRecordCount()))
		return errStandby
	}
	out := joined{records: make([]flow.Record, 0, ld.LogRecordCount())}
	now := time.Now()
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		if !flowRecord(lr, &out) {
			r.takeRecord(lr, now, &out)
		}
	})
	return r.emit(ctx, &out)
}

// takeRecord decodes one OTLP log record in any of its shapes. Fields come from
// the attributes first and then from the body, which wins.
func (r *ztunnelReceiver) takeRecord(lr plog.LogRecord, now time.Time, out *joined) {
	var l line
	attrs := lr.Attributes()
	l.decodeMap(attrs)
	if ts := lr.Timestamp(); ts != 0 {
		now = ts.AsTime()
	}
	body := lr.Body()
	var result textResult
	var reason flowsource.DropReason
	switch body.Type() {
	case pcommon.ValueTypeStr:
		result, reason = r.decodeText(filePath(attrs), []byte(body.Str()), true, &l)
	case pcommon.ValueTypeBytes:
		result, reason = r.decodeText(filePath(attrs), body.Bytes().AsRaw(), true, &l)
	case pcommon.ValueTypeMap:
		if log, ok := body.Map().Get("log"); ok && log.Type() == pcommon.ValueTypeStr {
			result, reason = r.decodeText(filePath(attrs), []byte(log.Str()), false, &l)
		} else {
			l.decodeMap(body.Map())
		}
	case pcommon.ValueTypeEmpty: // every field is an attribute
	default:
		result, reason = textMalformed, flowsource.DropMalformed
	}
	switch result {
	case textLine:
		r.take(&l, now, out)
	case textMalformed:
		out.drops = append(out.drops, reason)
	case textPartial: // held until its final part arrives
	}
}

func filePath(attrs pcommon.Map) string {
	if v, ok := attrs.Get(attrFilePath); ok {
		return v.AsString()
	}
	return ""
}
