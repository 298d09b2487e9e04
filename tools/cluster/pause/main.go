// Command pause is the pod sandbox image's program: it holds the pod's
// namespaces and does nothing else. As PID 1 it gets no default signal
// handling, so it ends on SIGTERM or SIGINT itself, or a pod would take its
// whole grace period to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
