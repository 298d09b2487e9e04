package main

import (
	"context"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestDemo runs the whole walk-through, as `make demo` does, and stops at its
// end: every step must complete against the built binary and the rendered chart.
// Its files go to a folder of the test's, so that a `make demo` running beside
// it keeps its own.
func TestDemo(t *testing.T) {
	controlplanetest.Require(t)
	controlplanetest.RequireBinary(t)
	charttest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, t.TempDir(), true); err != nil {
		t.Fatal(err)
	}
}
