package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// rawClientRun is one run of the raw client (rawclient.go) against a data
// plane's API.
type rawClientRun struct {
	// name names the run's log; label its line in the report.
	name, label string
	// api, addr and serverName say what the client dials.
	api, addr, serverName string
	// messages is how many messages it reads.
	messages int
	// fieldMask is the Hubble request's field_mask paths, comma-separated;
	// empty: none.
	fieldMask string
	// opened signals the server's side of each stream.
	opened <-chan struct{}
}

// rawClient runs the loadtest's own executable as the raw client of run, and
// measures it as the enforcer is measured: from the opening of its stream
// until it has read every message, its CPU time over that span and its peak
// resident memory read from /proc.
func (lt *loadtest) rawClient(ctx context.Context, run rawClientRun) (side, error) {
	self, err := os.Executable()
	if err != nil {
		return side{}, err
	}
	cmd := exec.Command(self, rawClientCommand,
		"-api", run.api, "-addr", run.addr, "-server-name", run.serverName,
		"-ca", lt.ca.CertFile, "-cert", lt.client.CertFile, "-key", lt.client.KeyFile,
		"-messages", strconv.Itoa(run.messages), "-backfill", backfill.String(),
		"-field-mask", run.fieldMask, "-timeout", lt.opts.timeout.String())
	// The client says on stdout that it has read every message.
	r, w, err := os.Pipe()
	if err != nil {
		return side{}, err
	}
	cmd.Stdout = w
	drain(run.opened)
	p, err := lt.launcher.Launch(run.name, "", cmd)
	w.Close()
	if err != nil {
		r.Close()
		return side{}, err
	}
	defer p.Stop()
	done := make(chan bool, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		done <- sc.Scan() && sc.Text() == rawClientDone
	}()
	start, cpu0, err := streamOpened(ctx, p, run.opened, time.Minute)
	if err != nil {
		return side{}, err
	}
	select {
	case ok := <-done:
		if !ok {
			<-p.Exited
			return side{}, p.Failed()
		}
	case <-ctx.Done():
		return side{}, ctx.Err()
	}
	return measured(p, run.label, start, time.Now(), cpu0)
}
