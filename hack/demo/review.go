package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// serveReview puts the enforcer's review page on a free loopback port (the
// chart's 127.0.0.1:8090 may be taken on a workstation) and remembers its URL.
// The page is the enforcer's own, so it stays open while the demo runs.
func (d *demo) serveReview(enforcerCfg map[string]any) {
	addr := freePort()
	set(enforcerCfg, addr, "extensions", "review", "endpoint")
	d.reviewURL = "http://" + addr + "/"
}

// checkReview makes sure the page answers before the demo points at it.
func (d *demo) checkReview(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.reviewURL, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the review page: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Network Enforcer review") {
		return fmt.Errorf("the review page at %s answered %s", d.reviewURL, resp.Status)
	}
	d.reviewNote()
	return nil
}

// reviewNote prints where the review page is.
func (d *demo) reviewNote() {
	if d.reviewURL != "" {
		fmt.Printf("    review page:   %s (the graph, each proposal and policy; read only, open until Ctrl-C)\n", d.reviewURL)
	}
}
