package testproc

import (
	"context"
	"os/exec"
	"syscall"
)

// Command is exec.Command for a process that is killed when the test process
// dies.
func Command(name string, args ...string) *exec.Cmd {
	return Tie(exec.Command(name, args...), syscall.SIGKILL)
}

// CommandContext is exec.CommandContext for a process that is killed when the
// test process dies.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return Tie(exec.CommandContext(ctx, name, args...), syscall.SIGKILL)
}
