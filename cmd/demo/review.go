package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kubewarden/network-enforcer/extension/reviewextension"
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

// showReviewGraph reads the review page's graph as the page does and prints
// its arrows: one per connection, even where the source's egress object and
// the destination's ingress object both list it, each end with its state.
func (d *demo) showReviewGraph(ctx context.Context) error {
	if d.reviewURL == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.reviewURL+"graph.json", http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the review page's graph: %w", err)
	}
	defer resp.Body.Close()
	var g reviewextension.Graph
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		return fmt.Errorf("the review page's graph: %w", err)
	}
	seen := map[string]bool{}
	both := 0
	for _, e := range g.Edges {
		key := fmt.Sprintf("%s -> %s %s", e.Source, e.Target, e.Label())
		if seen[key] {
			return fmt.Errorf("the review page draws %s twice", key)
		}
		seen[key] = true
		if e.Egress != nil && e.Ingress != nil {
			both++
		}
	}
	d.info("$ curl %sgraph.mmd   (%d arrows, one per connection; %d listed by both ends)", d.reviewURL, len(g.Edges), both)
	for _, e := range g.Edges {
		d.info("  %-44s -> %-44s %s", e.Source, e.Target, e.Text())
	}
	return nil
}
