package main

import "fmt"

// serveReview puts the enforcer's review page on a free loopback port (the
// chart's 127.0.0.1:8090 may be taken on a workstation) and remembers its URL.
// The page is the enforcer's own, so it stays open while the demo runs.
func (d *demo) serveReview(enforcerCfg map[string]any) {
	addr := freePort()
	set(enforcerCfg, addr, "extensions", "review", "endpoint")
	d.reviewURL = "http://" + addr + "/"
}

// reviewNote prints where the review page is.
func (d *demo) reviewNote() {
	if d.reviewURL != "" {
		fmt.Printf("    review page:   %s (the graph, each proposal and policy; read only, open until Ctrl-C)\n", d.reviewURL)
	}
}
