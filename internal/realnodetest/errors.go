package realnodetest

import (
	"fmt"
	"strings"
	"time"
)

// CommandError is a host command that failed, with what it printed.
type CommandError struct {
	Args   []string
	Err    error
	Output string
}

func (e *CommandError) Error() string {
	out := strings.TrimSpace(e.Output)
	if out == "" {
		return fmt.Sprintf("%s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Args, " "), e.Err, out)
}

func (e *CommandError) Unwrap() error { return e.Err }

// NotReadyError is a part of the cluster that did not come up in time.
type NotReadyError struct {
	What  string
	After time.Duration
	// Last is the last check's error.
	Last error
	// Logs is the folder of the parts' logs.
	Logs string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%s did not come up in %s (last check: %v); see %s", e.What, e.After, e.Last, e.Logs)
}

func (e *NotReadyError) Unwrap() error { return e.Last }

// ExitedError is a part of the cluster whose process has ended.
type ExitedError struct {
	Part string
	Log  string
}

func (e *ExitedError) Error() string { return fmt.Sprintf("%s exited; see %s", e.Part, e.Log) }

// BusyError is another cluster that holds the machine's lock.
type BusyError struct {
	Lock   string
	Waited time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("another cluster runs on this machine (lock %s) and did not end in %s", e.Lock, e.Waited)
}
