package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// ztunnelLines is where the pod's ConfigMap of recorded ztunnel log lines is
// mounted.
const ztunnelLines = "/etc/ztunnel/ztunnel.jsonl"

// ztunnel prints the recorded lines to stdout every few seconds, so that the
// kubelet writes them to the pod's CRI log file as it does ztunnel's, and a
// node agent that starts reading at the end of a file still sees them.
func ztunnel() error {
	f, err := os.Open(ztunnelLines)
	if err != nil {
		return err
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	f.Close()
	if err := sc.Err(); err != nil {
		return err
	}
	for {
		for _, l := range lines {
			fmt.Println(l)
		}
		time.Sleep(3 * time.Second)
	}
}
