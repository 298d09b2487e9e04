package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// takeTerminal puts the demo in a process group of its own and makes that group
// the terminal's foreground group, so that Ctrl-C interrupts the demo and what
// it started, and nothing else. Otherwise the interrupt also reaches what started
// the demo: make, which would report it as a failure and end by the signal, and
// the shell. The demo stops cleanly on it and exits 0, and make with it.
//
// It returns a function that gives the terminal back to the group that had it.
// Without a terminal, or outside its foreground group, it changes nothing.
func takeTerminal() (restore func()) {
	fd := int(os.Stdin.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return func() {}
	}
	if fg == unix.Getpid() {
		return func() {} // a group of its own already, as a shell starts it
	}
	if err := unix.Setpgid(0, 0); err != nil {
		return func() {}
	}
	setForeground := func(pgrp int) error {
		// A process outside the foreground group that sets it gets SIGTTOU.
		signal.Ignore(unix.SIGTTOU)
		defer signal.Reset(unix.SIGTTOU)
		return unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgrp)
	}
	if err := setForeground(unix.Getpid()); err != nil {
		_ = unix.Setpgid(0, fg)
		return func() {}
	}
	return func() { _ = setForeground(fg) }
}
