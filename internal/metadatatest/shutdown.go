package metadatatest

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

// CheckCallbacksUnregistered checks that each of the observable gauges is
// reported while comp runs and no longer once it has shut down: the
// collector's meter provider outlives its components (a reload builds new
// ones), and a callback left registered would report a stopped component
// beside its successor. tel is the telemetry that comp was created with.
func CheckCallbacksUnregistered(t *testing.T, tel *componenttest.Telemetry, comp component.Component, gauges ...string) {
	t.Helper()
	for _, name := range gauges {
		if _, err := tel.GetMetric(name); err != nil {
			t.Fatalf("before Shutdown: %v", err)
		}
	}
	if err := comp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range gauges {
		if m, err := tel.GetMetric(name); err == nil {
			t.Errorf("%s is still reported after Shutdown: %v", name, m)
		}
	}
}
