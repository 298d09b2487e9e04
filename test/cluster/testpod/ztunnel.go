package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// ztunnelLines is where the pod's ConfigMap of recorded ztunnel log lines is
// mounted.
const ztunnelLines = "/etc/ztunnel/ztunnel.jsonl"

// ztunnel prints the recorded lines to stdout every few seconds, so that the
// kubelet writes them to the pod's CRI log file as it does ztunnel's, and a
// node agent that starts reading at the end of a file still sees them.
//
// On :8081 a test counts what reaches the enforcer: /quiet stops the replay,
// /burst?lines=N&every=D prints N connections, each a "connection complete"
// line of its own source port (one flow record each), one every D, and /stop
// ends the burst and says how many of those it printed; POST /lines prints
// the lines of its body, a test's own connections as ztunnel logs them.
func ztunnel() error {
	lines, err := dataplanetest.LoadZtunnel(ztunnelLines)
	if err != nil {
		return err
	}
	var template map[string]any
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["message"] == "connection complete" {
			template = m
			break
		}
	}
	if template == nil {
		return fmt.Errorf("%s has no connection complete line", ztunnelLines)
	}
	var (
		out   sync.Mutex // one line at a time on stdout
		quiet atomic.Bool
		// burst holds a burst's line from its check of stopped to its
		// count, so that /stop's count is the last.
		burst   sync.Mutex
		stopped bool
		printed int
	)
	say := func(l string) {
		out.Lock()
		fmt.Println(l)
		out.Unlock()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/quiet", func(http.ResponseWriter, *http.Request) { quiet.Store(true) })
	mux.HandleFunc("/stop", func(w http.ResponseWriter, _ *http.Request) {
		burst.Lock()
		stopped = true
		n := printed
		burst.Unlock()
		fmt.Fprintln(w, n)
	})
	mux.HandleFunc("POST /lines", func(w http.ResponseWriter, r *http.Request) {
		lines, err := readLines(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, l := range lines {
			say(string(l))
		}
		fmt.Fprintln(w, len(lines))
	})
	mux.HandleFunc("/burst", func(w http.ResponseWriter, r *http.Request) {
		n, err1 := strconv.Atoi(r.URL.Query().Get("lines"))
		every, err2 := time.ParseDuration(r.URL.Query().Get("every"))
		if err1 != nil || err2 != nil || n <= 0 || n > 20000 {
			http.Error(w, "want lines=1..20000 and every=DURATION", http.StatusBadRequest)
			return
		}
		go func() {
			for i := 0; i < n; i++ {
				line, err := connectionLine(template, i)
				if err != nil {
					fmt.Fprintln(os.Stderr, "testpod:", err)
					return
				}
				burst.Lock()
				if stopped {
					burst.Unlock()
					return
				}
				say(line)
				printed++
				burst.Unlock()
				time.Sleep(every)
			}
		}()
	})
	go func() {
		fmt.Fprintln(os.Stderr, "testpod: ztunnel control:", http.ListenAndServe(":8081", mux))
		os.Exit(1)
	}()
	for !quiet.Load() {
		for _, l := range lines {
			say(l)
		}
		time.Sleep(3 * time.Second)
	}
	select {}
}

// connectionLine is the template's connection with source port 10000+i, at
// the current time.
func connectionLine(template map[string]any, i int) (string, error) {
	m := make(map[string]any, len(template))
	for k, v := range template {
		m[k] = v
	}
	src, _ := m["src.addr"].(string)
	host := src[:max(strings.LastIndex(src, ":"), 0)]
	m["src.addr"] = fmt.Sprintf("%s:%d", host, 10000+i%50000)
	m["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(m)
	return string(b), err
}
