// Command testpod is the program of the real-node tests' own pods, one binary in
// one image with a mode per role:
//
//	testpod goldmane Calico Goldmane's Flows service on :7443, mutual TLS only
//	testpod ztunnel  prints recorded ztunnel log lines to stdout, as ztunnel does,
//	                 and on :8081 bursts of connections that a test counts
//	testpod server [PORT...]  a TCP server on :8080 (or on each PORT) that
//	                 answers "ok" to each connection
//	testpod client   an HTTP server on :8081 whose /connect?addr=IP:PORT opens one
//	                 fresh TCP connection and says how it went, and whose
//	                 /list-pods lists the pods of its namespace as a real client
//	                 of the API server, with its service account
//	testpod app      server and client in one: a workload that is called and calls
//	testpod dial ADDR [INTERVAL [COUNT]]  connects to ADDR once (a Job's pod),
//	                 or every INTERVAL (a DaemonSet's), COUNT times when given
//
// A test drives the clients from the node, learns each connection's real
// addresses from the answer, and hands the same connections to the Goldmane or
// ztunnel pod, which reports them as its data plane does. (Cilium's flows are
// the real agent's own.)
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testpod goldmane|ztunnel|server|client|app|dial")
		os.Exit(2)
	}
	// As PID 1 the program gets no default signal handling: end on SIGTERM.
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
		os.Exit(0)
	}()
	var err error
	switch os.Args[1] {
	case "goldmane":
		err = goldmane()
	case "ztunnel":
		err = ztunnel()
	case "server":
		err = server(os.Args[2:]...)
	case "client":
		err = client()
	case "app":
		go func() {
			fmt.Fprintln(os.Stderr, "testpod: server:", server())
			os.Exit(1)
		}()
		err = client()
	case "dial":
		err = dialMode(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testpod:", err)
		os.Exit(1)
	}
}
