//go:build !linux

package testproc

import (
	"os/exec"
	"syscall"
)

// Tie returns cmd as it is: only Linux sends a signal when a parent dies, and
// the tests that need root (the real node) run only there.
func Tie(cmd *exec.Cmd, _ syscall.Signal) *exec.Cmd { return cmd }

// Tether returns path as it is (see Tie).
func Tether(_, path string) (string, error) { return path, nil }
