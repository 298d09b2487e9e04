package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Goals of issue 54's table at 5,000 nodes, 4 readers and a leader.
const (
	goalAllRead        = 2 * time.Minute
	goalProposals      = 10 * time.Minute
	goalRecordsPer1000 = 10.0
	goalLeaderCPU      = 0.2 // µs per cluster flow
	// goalMove is the default lease_duration plus a retry_period.
	goalMove = 17 * time.Second
)

type processRSS struct {
	name string
	rss  int64
}

// report is what a run measured.
type report struct {
	opts                   options
	created                time.Duration
	workloads, pods, edges int
	allRead                time.Duration
	sent, flowsRead        int64
	killedRead             int64 // what the killed reader had read
	flowTime, window       time.Duration
	leaderRecords          int64
	leaderCPU              time.Duration
	killedLeaderCPU        time.Duration
	// killedLeaderRecords is what a killed leader had taken.
	killedLeaderRecords int64
	// leaderMoved says that a reader took the lead at the leader's kill:
	// the leader's CPU and records are then not of one role.
	leaderMoved bool
	// monitored is the number of workloads with a monitor-mode policy;
	// violations compares their events with the connections sent.
	monitored  int
	violations counts
	// policyViolations compares the policies' status.violationCount with
	// the connections sent, by monitored workload.
	policyViolations counts
	proposalsWanted  int
	proposalsMissing int
	proposalsAfter   time.Duration
	counts           counts
	// miscounted are the edge directions of counts counted other than sent.
	miscounted             []sample
	apiWrites, watchEvents map[string]float64
	apiWindow, watchWindow time.Duration
	writerWrites           map[string]float64
	objectBytes            map[string]int64
	rss                    []processRSS
	readerMoved            time.Duration
	// dropped is what the live replicas dropped on the way, by metric.
	dropped      map[string]int64
	readerNodes  int64
	newLeader    time.Duration
	replaced     int
	replacedRead time.Duration
	notes        []string
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func (r *report) print(w io.Writer) {
	o := r.opts
	fmt.Fprintf(w, "\nscaletest: %d nodes, %d readers + a leader; %d workloads, %d pods (created in %s), %d edges; %.0f flows per node per second for %s\n",
		o.nodes, o.readers, r.workloads, r.pods, r.created.Round(time.Second), r.edges, o.rate, o.duration)
	for _, n := range r.notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  every node read, from the replicas' start: %s (goal ≤ %s at 5,000 nodes: %s)\n",
		r.allRead.Round(time.Millisecond), goalAllRead, met(r.allRead <= goalAllRead))
	fmt.Fprintf(w, "  proposals of every workload with flows: %d of %d exist; the last %s after its workload's first flow (goal ≤ %s: %s)\n",
		r.proposalsWanted-r.proposalsMissing, r.proposalsWanted, r.proposalsAfter.Round(time.Second), goalProposals,
		met(r.proposalsMissing == 0 && r.proposalsAfter <= goalProposals))
	if r.leaderMoved {
		fmt.Fprintf(w, "  leader records and CPU per cluster flow: not measured, a reader took the lead at the leader's kill\n")
	} else {
		r.printLeader(w)
	}
	secs := r.apiWindow.Seconds()
	var total int64
	for _, k := range slices.Sorted(maps.Keys(r.objectBytes)) {
		total += r.objectBytes[k]
	}
	fmt.Fprintf(w, "  membership and checkpoint bytes written, all replicas: %.1f KB/s (", float64(total)/1e3/secs)
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.objectBytes)) {
		parts = append(parts, fmt.Sprintf("%s %.1f KB/s", k, float64(r.objectBytes[k])/1e3/secs))
	}
	fmt.Fprintf(w, "%s; each stored object's JSON size, summed over a watch) beside the model's nodes × 30 B/s = %.1f KB/s\n",
		strings.Join(parts, ", "), float64(o.nodes)*30/1e3)
	replicas := float64(o.readers + 1)
	fmt.Fprintf(w, "  watch events sent by the API server, per replica per second, once every node is read (all watchers ÷ %d replicas; the harness's own two watches included):", o.readers+1)
	printRates(w, r.watchEvents, r.watchWindow.Seconds()*replicas)
	fmt.Fprintf(w, "  API writes per second, by resource and verb (the API server's apiserver_request_total, the fill excluded):")
	printRates(w, r.apiWrites, secs)
	fmt.Fprintf(w, "  the writer's writes per second (network_enforcer_writer_api_writes):")
	printRates(w, r.writerWrites, secs)
	for _, p := range r.rss {
		fmt.Fprintf(w, "  peak RSS %s: %d MiB\n", p.name, p.rss>>20)
	}
	if o.killReader {
		fmt.Fprintf(w, "  reader killed: its %d nodes read again after %s (goal ≤ %s: %s)\n",
			r.readerNodes, r.readerMoved.Round(time.Millisecond), goalMove, met(r.readerMoved > 0 && r.readerMoved <= goalMove))
	}
	if o.killLeader {
		fmt.Fprintf(w, "  leader killed: a new leader after %s (goal ≤ %s: %s)\n", r.newLeader.Round(time.Millisecond), goalMove,
			met(r.newLeader > 0 && r.newLeader <= goalMove))
	}
	if o.replace > 0 {
		fmt.Fprintf(w, "  %d nodes replaced: read after %s\n", r.replaced, r.replacedRead.Round(time.Millisecond))
	}
	if len(r.dropped) > 0 {
		fmt.Fprintln(w, "  dropped or failed on the way, live replicas (see droppedMetrics):")
		for _, s := range slices.Sorted(maps.Keys(r.dropped)) {
			fmt.Fprintf(w, "      %-100s %d\n", s, r.dropped[s])
		}
	}
	c := r.counts
	fmt.Fprintf(w, "  flows counted, per edge and direction against what was sent: %d edges, %d exact at %d flows per connection; "+
		"counted twice: %d edges (+%d flows); counted less (lost, or not yet in the evidence): %d edges, %d of them in evidence that lists only part of its edges; "+
		"absent from the evidence (no proposal or entry yet): %d edges; %d flows short in all (goal 0, 0: %s)\n",
		c.edges, c.exact, c.perConn, c.over, c.overBy, c.under, c.underListedPart, c.missing, c.underBy, met(c.edges > 0 && c.exact == c.edges))
	if v := r.violations; r.monitored > 0 {
		fmt.Fprintf(w, "  violations reported, per edge into the %d workloads with a monitor-mode policy against the connections sent: %d edges, %d exact at %d events per connection; "+
			"reported twice: %d edges (+%d events); reported less: %d edges (-%d events) (goal 0, 0: %s)\n",
			r.monitored, v.edges, v.exact, v.perConn, v.over, v.overBy, v.under, v.underBy, met(v.edges > 0 && v.exact == v.edges))
		v = r.policyViolations
		fmt.Fprintf(w, "  violations in the policies' status (violationCount), per monitored workload against the connections sent into it: %d workloads, %d exact at %d per connection; "+
			"counted twice: %d workloads (+%d); counted less: %d workloads (-%d); no policy: %d (goal 0, 0: %s)\n",
			v.edges, v.exact, v.perConn, v.over, v.overBy, v.under, v.underBy, v.missing, met(v.edges > 0 && v.exact == v.edges))
	}
	if r.proposalsMissing > 0 {
		fmt.Fprintf(w, "      (with proposals missing, the counts say how far the writer got, not what was lost)\n")
	}
}

// printLeader prints the leader's records and CPU per cluster flow.
func (r *report) printLeader(w io.Writer) {
	per1000 := float64(r.leaderRecords) * 1000 / float64(max(r.sent, 1))
	fmt.Fprintf(w, "  leader records per 1,000 cluster flows: %.2f (%d records; %d cluster flows sent, %d read, a killed reader's re-read included) (goal ≤ %.0f: %s)\n",
		per1000, r.leaderRecords, r.sent, r.flowsRead, goalRecordsPer1000, met(per1000 <= goalRecordsPer1000))
	cpu := float64((r.leaderCPU + r.killedLeaderCPU).Nanoseconds()) / 1e3 / float64(max(r.sent, 1))
	fmt.Fprintf(w, "  leader CPU per cluster flow: %.3f µs (%s over %s, fixed costs included) (goal ≤ %.1f: %s)\n",
		cpu, (r.leaderCPU + r.killedLeaderCPU).Round(time.Millisecond), r.window.Round(time.Second), goalLeaderCPU, met(cpu <= goalLeaderCPU))
}

// printRates prints each series per second of secs, the largest first.
func printRates(w io.Writer, m map[string]float64, secs float64) {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case m[a] > m[b]:
			return -1
		case m[a] < m[b]:
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(keys) == 0 {
		fmt.Fprintf(w, " none\n")
		return
	}
	fmt.Fprintln(w)
	var rest float64
	for i, k := range keys {
		if i >= 10 {
			rest += m[k]
			continue
		}
		fmt.Fprintf(w, "      %-60s %8.2f/s\n", k, m[k]/secs)
	}
	if rest > 0 {
		fmt.Fprintf(w, "      %-60s %8.2f/s\n", fmt.Sprintf("the other %d", len(keys)-10), rest/secs)
	}
}
