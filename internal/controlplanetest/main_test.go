package controlplanetest

import (
	"fmt"
	"os"
	"testing"
)

// holdVar makes this package's test binary, run by
// TestNothingOutlivesAKilledTestBinary, start a control plane with
// kube-controller-manager, say so, and wait to be killed.
const holdVar = "NETWORK_ENFORCER_TEST_HOLD_CONTROLPLANE"

func TestMain(m *testing.M) {
	if os.Getenv(holdVar) != "" {
		e, err := New(Options{ControllerManager: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(heldLine + e.dir)
		select {}
	}
	os.Exit(m.Run())
}
