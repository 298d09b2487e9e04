package ztunnelreceiver

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
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

// newOTLPInputs builds the collector's own OTLP receiver for each configured
// listener, handing every log batch to r: one a protocol, so that r knows the
// transport of each batch for the collector's receiver telemetry.
func newOTLPInputs(ctx context.Context, set receiver.Settings, cfg *Config, r *ztunnelReceiver) ([]component.Component, error) {
	f := otlpreceiver.NewFactory()
	// The OTLP receiver checks that it runs under its own type; its telemetry then
	// names it otlp/<this receiver's ID>.
	set.ID = component.NewIDWithName(f.Type(), strings.ReplaceAll(set.ID.String(), "/", "_"))
	var inputs []component.Component
	add := func(in input, oc *otlpreceiver.Config) error {
		next, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
			return r.consumeOTLP(ctx, in, ld)
		})
		if err != nil {
			return err
		}
		c, err := f.CreateLogs(ctx, set, oc, next)
		if err == nil {
			inputs = append(inputs, c)
		}
		return err
	}
	if cfg.Protocols.GRPC.HasValue() {
		oc := f.CreateDefaultConfig().(*otlpreceiver.Config)
		oc.Protocols.GRPC = cfg.Protocols.GRPC
		oc.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
		if err := add(inputOTLPGRPC, oc); err != nil {
			return nil, err
		}
	}
	if cfg.Protocols.HTTP.HasValue() {
		oc := f.CreateDefaultConfig().(*otlpreceiver.Config)
		oc.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
		oc.Protocols.HTTP.GetOrInsertDefault().ServerConfig = *cfg.Protocols.HTTP.Get()
		if err := add(inputOTLPHTTP, oc); err != nil {
			return nil, err
		}
	}
	return inputs, nil
}

// consumeOTLP takes a batch as fluent-bit's opentelemetry output sends it: per
// record, the body is the whole ztunnel line (maybe with a CRI prefix), or the
// message with the other fields as attributes, or a kvlist of the whole record.
// Flow records that the node agent forwards pass through. in is the listener
// that took it.
func (r *ztunnelReceiver) consumeOTLP(ctx context.Context, in input, ld plog.Logs) error {
	if r.leader != nil && !r.leader.IsLeader() {
		n := ld.LogRecordCount()
		r.refused.Add(ctx, int64(n))
		r.obs.refuse(ctx, in, n, errStandby)
		return errStandby
	}
	var out joined
	now := time.Now()
	b := getBatch()
	defer b.release()
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		if lr.EventName() == flow.EventName {
			r.join(b, &out) // the lines before it go first, as they came
			flowRecord(lr, in, &out)
			return
		}
		r.takeRecord(b, lr, in, now, &out)
	})
	r.join(b, &out)
	return r.emit(ctx, &out)
}

// takeRecord decodes one OTLP log record of input in, in any of its shapes.
// Fields come from the attributes first and then from the body, which wins.
func (r *ztunnelReceiver) takeRecord(b *batch, lr plog.LogRecord, in input, now time.Time, out *joined) {
	l := b.newLine()
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
		result, reason = r.decodeString(filePath(attrs), body.Str(), true, l)
	case pcommon.ValueTypeBytes:
		result, reason = r.decodeText(filePath(attrs), body.Bytes().AsRaw(), true, l)
	case pcommon.ValueTypeMap:
		if log, ok := body.Map().Get("log"); ok && log.Type() == pcommon.ValueTypeStr {
			result, reason = r.decodeString(filePath(attrs), log.Str(), false, l)
		} else {
			l.decodeMap(body.Map())
		}
	case pcommon.ValueTypeEmpty: // every field is an attribute
	default:
		result, reason = textMalformed, flowsource.DropMalformed
	}
	switch result {
	case textLine:
		r.take(b, l, in, now, out)
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
