package leaderexporter

import (
	"testing"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestLeaderAnswersMapAsTheOTLPExporterDoes: a standby's Unavailable and the
// other transient codes are retried; the rest are permanent.
func TestLeaderAnswersMapAsTheOTLPExporterDoes(t *testing.T) {
	if err := processError(nil); err != nil {
		t.Fatalf("no error: %v", err)
	}
	for code, permanent := range map[codes.Code]bool{
		codes.Unavailable:       false,
		codes.DeadlineExceeded:  false,
		codes.Aborted:           false,
		codes.Canceled:          false,
		codes.ResourceExhausted: true, // without RetryInfo
		codes.InvalidArgument:   true,
		codes.Internal:          true,
		codes.Unauthenticated:   true,
		codes.PermissionDenied:  true,
	} {
		err := processError(status.Error(code, "answer"))
		if err == nil || consumererror.IsPermanent(err) != permanent {
			t.Errorf("%s: %v, permanent %t; want permanent %t", code, err, consumererror.IsPermanent(err), permanent)
		}
	}
}
