package ztunnelreceiver

import (
	"context"
	"slices"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"

	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// input is where a line came from. Each input is a transport of the
// collector's standard receiver telemetry (otelcol_receiver_accepted_log_records
// and the refused and failed counts), so a record is counted on the input of
// its line, also when the joiner hands it on later.
type input uint8

const (
	inputOTLPGRPC input = iota
	inputOTLPHTTP
	inputFile
	numInputs
)

// transports names each input's transport as the collector's receiver
// telemetry does; the file input has none, as contrib's filelog receiver.
var transports = [numInputs]string{inputOTLPGRPC: "grpc", inputOTLPHTTP: "http", inputFile: ""}

// obsReports are the receiver's ObsReport of each input.
type obsReports [numInputs]*receiverhelper.ObsReport

func newObsReports(set receiver.Settings) (obsReports, error) {
	var o obsReports
	for in, transport := range transports {
		var err error
		if o[in], err = receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
			ReceiverID: set.ID, Transport: transport, ReceiverCreateSettings: set,
		}); err != nil {
			return o, err
		}
	}
	return o, nil
}

// obsFormat is what the receiver takes in, in the collector's receiver telemetry:
// ztunnel's log lines, whichever input carries them.
var obsFormat = metadata.Type.String()

// consume hands logs to next as one receive operation for each input that
// counts records in it, each ended with next's answer: accepted, or refused or
// failed as the collector tells them apart.
func (o *obsReports) consume(ctx context.Context, next consumer.Logs, logs plog.Logs, counts *[numInputs]int) error {
	var ops [numInputs]context.Context
	for in, n := range counts {
		if n > 0 {
			ops[in] = o[in].StartLogsOp(ctx) //nolint:fatcontext // one operation per input, each from ctx: none nests in another
		}
	}
	// The pipeline runs under the first operation's context.
	nextCtx := ctx
	if first := slices.IndexFunc(ops[:], func(c context.Context) bool { return c != nil }); first >= 0 {
		nextCtx = ops[first]
	}
	err := next.ConsumeLogs(nextCtx, logs)
	for in, n := range counts {
		if n > 0 {
			o[in].EndLogsOp(ops[in], obsFormat, n, err)
		}
	}
	return err
}

// refuse counts n records of input in that the receiver answered with err
// without taking them.
func (o *obsReports) refuse(ctx context.Context, in input, n int, err error) {
	o[in].EndLogsOp(o[in].StartLogsOp(ctx), obsFormat, n, err)
}
