package testproc

import (
	"os/exec"
	"syscall"
)

// Tie makes the kernel send sig to cmd's process when the test process dies.
// SIGKILL suits most; a process that must clean up after itself (a script that
// undoes its changes to the host) gets SIGTERM and traps it.
//
// The kernel sends it when the thread that started the process ends, which in
// a Go program is when the process ends: the runtime ends a thread before only
// when a goroutine locked to it (runtime.LockOSThread) returns without
// unlocking; no code of this project locks a thread, and chromedp, which
// does, unlocks it.
func Tie(cmd *exec.Cmd, sig syscall.Signal) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	return cmd
}
