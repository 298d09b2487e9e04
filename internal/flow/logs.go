package flow

import "go.opentelemetry.io/collector/pdata/plog"

// EachLogRecord calls fn with every log record of ld, in order: the walk that
// every component reading flow records makes.
func EachLogRecord(ld plog.Logs, fn func(plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				fn(lrs.At(k))
			}
		}
	}
}
