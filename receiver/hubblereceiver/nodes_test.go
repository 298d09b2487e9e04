package hubblereceiver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// clusterSetup starts a fake Cilium cluster whose nodes serve their share of
// responses, and a nodes-mode config that reads it over TLS with a client
// certificate, as Hubble Relay does.
func clusterSetup(t *testing.T, responses []*observer.GetFlowsResponse, nodes ...string) (*dataplanetest.HubbleCluster, *Config) {
	t.Helper()
	ca := certtest.NewCA(t, "cilium-ca")
	c, err := dataplanetest.NewHubbleCluster(ca, responses, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := createDefaultConfig().(*Config)
	// The Peer service's TLS server name is nodes mode's default.
	mode := cfg.Nodes.GetOrInsertDefault()
	mode.Endpoint = c.PeerAddr
	mode.TLS.CAFile = ca.CertFile
	mode.TLS.CertFile = c.Client.CertFile
	mode.TLS.KeyFile = c.Client.KeyFile
	cfg.Reconnect.InitialInterval = 20 * time.Millisecond
	cfg.Reconnect.MaxInterval = 100 * time.Millisecond
	cfg.Backfill.Since = fixtureAge
	return c, cfg
}

// startMember starts a nodes-mode receiver whose enforcer is a fake that owns
// the nodes that owns selects.
func startMember(t *testing.T, cfg *Config, owns func(string) bool) (*flowsourcetest.Harness, *hubbleReceiver, *enforcerextensiontest.Enforcer) {
	t.Helper()
	e := enforcerextensiontest.New()
	e.SetOwner(owns)
	h, r := startWithEnforcer(t, cfg, e)
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return h, r, e
}

// onNode returns copies of responses seen by node.
func onNode(node string, responses []*observer.GetFlowsResponse) []*observer.GetFlowsResponse {
	out := make([]*observer.GetFlowsResponse, 0, len(responses))
	for _, resp := range responses {
		c := proto.Clone(resp).(*observer.GetFlowsResponse)
		c.NodeName = node
		if f := c.GetFlow(); f != nil {
			f.NodeName = node
		}
		out = append(out, c)
	}
	return out
}

// byTime sorts responses by time, as the relay merges its nodes' flows.
func byTime(responses []*observer.GetFlowsResponse) []*observer.GetFlowsResponse {
	out := slices.Clone(responses)
	slices.SortStableFunc(out, func(a, b *observer.GetFlowsResponse) int { return a.GetTime().AsTime().Compare(b.GetTime().AsTime()) })
	return out
}

func sorted(records []string) []string {
	out := slices.Clone(records)
	slices.Sort(out)
	return out
}

func waitReading(t *testing.T, r *hubbleReceiver, want ...string) {
	t.Helper()
	slices.Sort(want)
	waitFor(t, fmt.Sprintf("reading %v", want), func() bool { return slices.Equal(sorted(r.mode.(*nodePool).readingNow()), want) })
}

var (
	frontend = dataplanetest.End{Namespace: "shop", Pod: "frontend-6d5f7b8c9-abcde", IP: "10.0.0.1", Workload: "frontend", Identity: 1001}
	cart     = dataplanetest.End{Namespace: "shop", Pod: "cart-7f8e9d0c1-fghij", IP: "10.0.0.2", Workload: "cart", Identity: 1002}
	orders   = dataplanetest.End{Namespace: "shop", Pod: "orders-5d8f7c9b4-qw7lm", IP: "10.0.0.3", Workload: "orders", Identity: 1003}
)

// threeNodeFlows are the flows of three nodes: connections of each node's
// own, and one connection that the agents of worker-1 and worker-2 both
// report, which gives one record.
func threeNodeFlows() []*observer.GetFlowsResponse {
	var all []*observer.GetFlowsResponse
	for i, node := range []string{"worker-1", "worker-2", "worker-3"} {
		port := uint32(41000 + 10*i)
		all = append(all, onNode(node, dataplanetest.NewHubbleConnection(frontend, cart, port, 8080, dataplanetest.ConnectionAllowed))...)
		all = append(all, onNode(node, dataplanetest.NewHubbleConnection(frontend, orders, port+1, 8080, dataplanetest.ConnectionDenied))...)
		all = append(all, onNode(node, dataplanetest.NewHubbleConnection(cart, orders, port+2, 9000+uint32(i), dataplanetest.ConnectionUnenforced))...)
	}
	shared := dataplanetest.NewHubbleConnection(orders, cart, 42000, 8080, dataplanetest.ConnectionAllowed)
	all = append(all, onNode("worker-1", shared)...)
	all = append(all, onNode("worker-2", shared)...)
	return all
}

// relayRecords are the records that relay mode gives for the responses,
// merged by time as the relay sends them.
func relayRecords(t *testing.T, responses []*observer.GetFlowsResponse) []string {
	t.Helper()
	relay := dataplanetest.NewHubbleRelay(byTime(responses))
	_, cfg := tlsSetup(t, relay)
	h, r := startReceiver(t, cfg)
	last := byTime(responses)[len(responses)-1].GetTime().AsTime()
	waitFor(t, "the relay's flows", func() bool { return r.mode.(*relayMode).cursor.Latest().Equal(last) })
	r.StopStreaming() // hands the open batch on
	return h.Records()
}

// TestNodesModeAsksWholeFlowsByDefault: nodes mode's field_mask is off
// unless set, whatever relay mode's default: each node sends whole flows.
func TestNodesModeAsksWholeFlowsByDefault(t *testing.T) {
	c, cfg := clusterSetup(t, threeNodeFlows(), "worker-1")
	_, r := startReceiver(t, cfg)
	waitReading(t, r, "worker-1")
	node := c.Node("worker-1")
	waitFor(t, "worker-1's stream", func() bool { return len(node.Requests()) > 0 })
	if req := node.Requests()[0]; !req.GetFollow() || req.GetFieldMask() != nil {
		t.Fatalf("request %v, want follow and whole flows", req)
	}
}

// TestNodesModeReadsEveryNodeOnce: over three nodes, each node is read by one
// stream of its own (follow, the backfill, the field mask), over TLS with the
// server name that the Peer service announces, every flow once; a connection
// that two nodes report gives one record; the records are those that relay
// mode gives for the same flows.
func TestNodesModeReadsEveryNodeOnce(t *testing.T) {
	flows := threeNodeFlows()
	want := sorted(relayRecords(t, flows))
	// Each node: an allowed connection (the verdict, and the trace of the
	// first packet at the destination), a denied one and an unenforced one;
	// and the connection of two nodes, allowed.
	if len(want) != 3*4+2 {
		t.Fatalf("relay mode gave %d records, want 14:\n%s", len(want), strings.Join(want, "\n"))
	}

	c, cfg := clusterSetup(t, flows, "worker-1", "worker-2", "worker-3")
	cfg.Nodes.Get().FieldMask = true // off by default in nodes mode
	h, r := startReceiver(t, cfg)
	waitReading(t, r, "worker-1", "worker-2", "worker-3")
	h.WaitRecords(t, len(want))
	for _, node := range []string{"worker-1", "worker-2", "worker-3"} {
		n := c.Node(node)
		reqs := n.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d streams, want 1", node, len(reqs))
		}
		if !reqs[0].GetFollow() || reqs[0].GetSince() == nil || !slices.Equal(reqs[0].GetFieldMask().GetPaths(), fieldMaskPaths) {
			t.Errorf("%s: request %v, want follow, the backfill and the field mask", node, reqs[0])
		}
	}
	// Nothing more arrives than the relay gave.
	r.StopStreaming()
	if got := sorted(h.Records()); !slices.Equal(got, want) {
		t.Fatalf("nodes mode records:\n%s\nrelay mode records:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := flowsourcetest.Read(h.Tel).Dropped["same_connection"]; n == 0 {
		t.Error("no flow dropped as same_connection: the connection of two nodes was not merged")
	}
}

// TestNodesModeGivesTheFixtureRecords: the shared fixture, each flow served by
// the node that saw it, gives the records, drops and lost events that relay
// mode gives.
func TestNodesModeGivesTheFixtureRecords(t *testing.T) {
	_, cfg := clusterSetup(t, loadFixtures(t), "worker-1", "worker-2", "worker-3")
	h, _ := startReceiver(t, cfg)
	got := h.WaitRecords(t, len(wantFixtureRecords))
	if !slices.Equal(sorted(got), sorted(wantFixtureRecords)) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFixtureRecords, "\n"))
	}
	h.WaitDrops(t, wantFixtureDrops)
	waitFor(t, "the lost events of worker-2", func() bool { return flowsourcetest.Read(h.Tel).Lost == 17 })
	// worker-2's own server does not name itself: its reader does.
	waitFor(t, "the gap of worker-2", func() bool { return slices.Equal(h.Gaps(), []string{"lost_events worker-2 17"}) })
}

// TestOwnershipMovesNodes: with a membership, the receiver reads only the
// nodes it owns; a change of members stops the streams of the nodes it no
// longer owns, checkpointed at the newest flow handed on, and starts those it
// owns now, leaving the others alone.
func TestOwnershipMovesNodes(t *testing.T) {
	flows := threeNodeFlows()
	c, cfg := clusterSetup(t, flows, "worker-1", "worker-2", "worker-3")
	h, r, e := startMember(t, cfg, func(node string) bool { return node != "worker-2" })
	waitReading(t, r, "worker-1", "worker-3")
	newest := func(node string) time.Time {
		var t time.Time
		for _, resp := range flows {
			if resp.GetNodeName() == node && resp.GetTime().AsTime().After(t) {
				t = resp.GetTime().AsTime()
			}
		}
		return t
	}
	for _, node := range []string{"worker-1", "worker-3"} {
		waitFor(t, "the checkpoint of "+node, func() bool {
			cp, ok := e.CheckpointOf(node)
			return ok && cp.Equal(newest(node))
		})
	}
	if n := len(c.Node("worker-2").Requests()); n != 0 {
		t.Fatalf("worker-2, owned by another replica, was read by %d streams", n)
	}
	if _, ok := e.CheckpointOf("worker-2"); ok {
		t.Fatal("worker-2, not read, has a checkpoint")
	}

	e.SetOwner(func(node string) bool { return node != "worker-1" })
	waitReading(t, r, "worker-2", "worker-3")
	waitFor(t, "worker-2's stream", func() bool { return len(c.Node("worker-2").Requests()) == 1 })
	waitFor(t, "the checkpoint of worker-2", func() bool {
		cp, ok := e.CheckpointOf("worker-2")
		return ok && cp.Equal(newest("worker-2"))
	})
	if n := len(c.Node("worker-3").Requests()); n != 1 {
		t.Fatalf("worker-3, owned throughout, was read by %d streams, want 1", n)
	}
	// worker-1's stream is closed: what its agent sees now is another
	// replica's to read.
	before := h.FlowCount()
	c.Push(onNode("worker-1", dataplanetest.NewHubbleConnection(frontend, orders, 43000, 8080, dataplanetest.ConnectionDenied))...)
	c.Push(onNode("worker-3", dataplanetest.NewHubbleConnection(frontend, orders, 43001, 8080, dataplanetest.ConnectionDenied))...)
	h.WaitRecords(t, before+1)
	r.StopStreaming()
	if got := h.Records(); len(got) != before+1 {
		t.Fatalf("%d records after the move, want %d: worker-3's new connection only", len(got), before+1)
	}
}

// TestMovedNodeStartsFromItsCheckpoint: a node that this replica comes to own
// is read from two connection periods before its previous owner's
// checkpoint; the flows up to the checkpoint only tell the connections apart,
// so that a connection counted by the previous owner is not counted again.
func TestMovedNodeStartsFromItsCheckpoint(t *testing.T) {
	straddling := onNode("worker-2", dataplanetest.NewHubbleConnection(frontend, cart, 40001, 8080, dataplanetest.ConnectionUnenforced))
	next := onNode("worker-2", dataplanetest.NewHubbleConnection(frontend, cart, 40002, 8080, dataplanetest.ConnectionUnenforced))
	c, cfg := clusterSetup(t, append(slices.Clone(straddling), next...), "worker-1", "worker-2")
	h, r, e := startMember(t, cfg, func(node string) bool { return node == "worker-1" })
	waitReading(t, r, "worker-1")

	// The previous owner handed on worker-2's flows up to the straddling
	// connection's first trace after the handshake began.
	checkpoint := straddling[2].GetFlow().GetTime().AsTime()
	e.Checkpoint("worker-2", checkpoint)
	e.SetOwner(func(string) bool { return true })
	waitReading(t, r, "worker-1", "worker-2")
	newest := next[len(next)-1].GetFlow().GetTime().AsTime()
	waitFor(t, "worker-2's checkpoint after its newest flow", func() bool {
		cp, _ := e.CheckpointOf("worker-2")
		return cp.Equal(newest)
	})
	reqs := c.Node("worker-2").Requests()
	if len(reqs) != 1 || !reqs[0].GetSince().AsTime().Equal(checkpoint.Add(-2*connectionPeriod)) {
		t.Fatalf("worker-2's requests %v, want one since two connection periods before the checkpoint %v", reqs, checkpoint)
	}
	r.StopStreaming()
	got := h.Records()
	if len(got) != 1 || !strings.Contains(got[0], ":8080") {
		t.Fatalf("records %v, want one: the connection after the checkpoint, not again the one counted", got)
	}
	if n := flowsourcetest.Read(h.Tel).Dropped["handed_off"]; n != 3 {
		t.Errorf("%d flows dropped as handed off, want the 3 up to the checkpoint", n)
	}
}

// TestMovedNodeWaitsForItsHandOver: a node that this replica comes to own is
// not read while its previous owner's checkpoint is not final (that owner is
// live and has not released it); once it is, the node is read from the final
// checkpoint, so that nothing that owner handed on since its last renewal is
// read again.
func TestMovedNodeWaitsForItsHandOver(t *testing.T) {
	conn := onNode("worker-2", dataplanetest.NewHubbleConnection(frontend, cart, 40001, 8080, dataplanetest.ConnectionUnenforced))
	c, cfg := clusterSetup(t, conn, "worker-1", "worker-2")
	_, r, e := startMember(t, cfg, func(node string) bool { return node == "worker-1" })
	waitReading(t, r, "worker-1")

	e.Checkpoint("worker-2", conn[0].GetFlow().GetTime().AsTime()) // published before the hand-over
	e.SetSettled(func(node string) bool { return node != "worker-2" })
	e.SetOwner(func(string) bool { return true })
	waitReading(t, r, "worker-1", "worker-2")
	// The reader polls the hand-over: after several answers of "not
	// settled", it has still not dialled the node.
	asked := e.SettledAsked("worker-2")
	waitFor(t, "three more polls of worker-2's hand-over", func() bool { return e.SettledAsked("worker-2") >= asked+3 })
	if n := len(c.Node("worker-2").Requests()); n != 0 {
		t.Fatalf("worker-2 was read %d times before its previous owner released it", n)
	}

	final := conn[len(conn)-1].GetFlow().GetTime().AsTime()
	e.Checkpoint("worker-2", final) // the previous owner's release
	e.SetSettled(nil)
	waitFor(t, "worker-2's stream", func() bool { return len(c.Node("worker-2").Requests()) == 1 })
	if since := c.Node("worker-2").Requests()[0].GetSince().AsTime(); !since.Equal(final.Add(-2 * connectionPeriod)) {
		t.Fatalf("worker-2 read since %v, want two connection periods before the final checkpoint %v", since, final)
	}
}

// TestCheckpointFollowsThePipeline: a node's checkpoint moves once the
// pipeline has taken the batch of its flows, not when they are received.
func TestCheckpointFollowsThePipeline(t *testing.T) {
	flows := onNode("worker-1", dataplanetest.NewHubbleConnection(frontend, orders, 40001, 8080, dataplanetest.ConnectionDenied))
	_, cfg := clusterSetup(t, flows, "worker-1")
	g := startGated(t, cfg)
	e, h := g.e, g.h
	// The connection's nine flows: one record, eight drops.
	waitFor(t, "every flow received", func() bool {
		var dropped int64
		for _, n := range flowsourcetest.Read(h.Tel).Dropped {
			dropped += n
		}
		return dropped == int64(len(flows))-1
	})
	<-g.entered // the pipeline holds the batch of the connection's record
	// The reader claimed the node at the backfill's start. A batch of flows
	// that gave no record may go out before the record's batch (its linger
	// ended first, as on a slow machine) and move the checkpoint to them;
	// the record's batch, held by the pipeline, does not: the checkpoint
	// stays before the newest flow.
	newest := flows[len(flows)-1].GetFlow().GetTime().AsTime()
	if cp, ok := e.CheckpointOf("worker-1"); ok && !cp.Before(newest) {
		t.Fatalf("checkpoint %v while the pipeline has not taken the flows", cp)
	}
	g.open()
	waitFor(t, "the checkpoint", func() bool {
		cp, ok := e.CheckpointOf("worker-1")
		return ok && cp.Equal(newest)
	})
	if n := h.FlowCount(); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// TestPeerChanges: PEER_DELETED stops the node's stream; PEER_UPDATED with a
// new address re-dials the node there, and the stream resumes after the
// newest flow received.
func TestPeerChanges(t *testing.T) {
	first := onNode("worker-1", dataplanetest.NewHubbleConnection(frontend, orders, 40001, 8080, dataplanetest.ConnectionDenied))
	c, cfg := clusterSetup(t, first, "worker-1", "worker-2")
	h, r := startReceiver(t, cfg)
	waitReading(t, r, "worker-1", "worker-2")
	h.WaitRecords(t, 1)

	c.DeleteNode("worker-2")
	waitReading(t, r, "worker-1")

	if err := c.MoveNode("worker-1"); err != nil {
		t.Fatal(err)
	}
	n := c.Node("worker-1")
	waitFor(t, "worker-1's stream at its new address", func() bool { return len(n.Requests()) == 2 })
	newest := first[len(first)-1].GetFlow().GetTime().AsTime()
	if since := n.LastRequest().GetSince().AsTime(); !since.After(newest) {
		t.Fatalf("re-dialled since %v, want after the newest flow received (%v)", since, newest)
	}
	c.Push(onNode("worker-1", dataplanetest.NewHubbleConnection(frontend, orders, 40002, 8080, dataplanetest.ConnectionDenied))...)
	h.WaitRecords(t, 2)
	if n := flowsourcetest.Read(h.Tel).Accepted; n > 2 {
		t.Fatalf("%d records, want 2: nothing read twice", n)
	}
}

// TestPeerStreamReconnects: when the Peer service's stream breaks, the
// receiver re-opens it with backoff; the nodes read go on being read, and a
// node announced on the new stream is read.
func TestPeerStreamReconnects(t *testing.T) {
	c, cfg := clusterSetup(t, nil, "worker-1")
	h, r := startReceiver(t, cfg)
	<-c.Peer.Opened
	waitReading(t, r, "worker-1")
	// The receiver counts the node as read when it opens the stream; the
	// node's server records the request a moment later (under the race
	// detector, after the look that follows the break).
	waitFor(t, "worker-1's stream", func() bool { return len(c.Node("worker-1").Requests()) == 1 })
	c.Peer.Break()
	<-c.Peer.Opened
	h.WaitLog(t, "the Peer service's stream broke")
	if _, err := c.AddNode("worker-2"); err != nil {
		t.Fatal(err)
	}
	waitReading(t, r, "worker-1", "worker-2")
	waitFor(t, "worker-2's stream", func() bool { return len(c.Node("worker-2").Requests()) == 1 })
	if n := len(c.Node("worker-1").Requests()); n != 1 {
		t.Fatalf("worker-1 was read by %d streams, want 1: a break of the Peer stream does not break the nodes'", n)
	}
}

// TestBrokenNodeStreamResumes: a node's stream that breaks is counted as a
// node error, re-opened with backoff, and resumes after the newest flow
// received from that node, each flow once; the other nodes' streams go on.
func TestBrokenNodeStreamResumes(t *testing.T) {
	all := onNode("worker-1", loadFixtures(t))
	c, cfg := clusterSetup(t, all[:8], "worker-1", "worker-2")
	h, r := startReceiver(t, cfg)
	waitReading(t, r, "worker-1", "worker-2")
	h.WaitRecords(t, 7) // the first 8 lines hold 7 records and a reply

	n := c.Node("worker-1")
	n.SetResponses(all)
	n.Break()
	got := h.WaitRecords(t, len(wantFixtureRecords))
	if !slices.Equal(got, wantFixtureRecords) {
		t.Fatalf("after a break, records:\n%s\nwant each once:\n%s", strings.Join(got, "\n"), strings.Join(wantFixtureRecords, "\n"))
	}
	resumed := n.LastRequest().GetSince().AsTime()
	if want := all[7].GetFlow().GetTime().AsTime(); !resumed.After(want) {
		t.Fatalf("re-opened since %v, want after the last flow received (%v)", resumed, want)
	}
	if errs := flowsourcetest.Read(h.Tel).NodeErrors; errs != 1 {
		t.Errorf("node errors %d, want 1", errs)
	}
	h.WaitLog(t, "the node's Hubble stream broke")
	if reqs := len(c.Node("worker-2").Requests()); reqs != 1 {
		t.Errorf("worker-2 was read by %d streams, want 1: its stream did not break", reqs)
	}
	// The break is a gap of worker-1 alone (the fixture's lost events are
	// worker-1's here).
	if gaps := h.Gaps(); !slices.Contains(gaps, "node_unreadable worker-1 0") || slices.ContainsFunc(gaps, func(g string) bool {
		return strings.Contains(g, "worker-2")
	}) {
		t.Errorf("gaps %q, want worker-1 unreadable and nothing of worker-2", gaps)
	}
}

// TestNodeWithoutServerNameIsAnError: with TLS on, a node that the Peer
// service announces without a TLS server name is not dialled (Hubble Relay
// refuses it too): the error is counted and logged.
func TestNodeWithoutServerNameIsAnError(t *testing.T) {
	c, cfg := clusterSetup(t, nil, "worker-1")
	h, r := startReceiver(t, cfg)
	waitReading(t, r, "worker-1")
	c.Peer.Announce(&peerpb.ChangeNotification{Name: "worker-9", Address: "127.0.0.1:1", Type: peerpb.ChangeNotificationType_PEER_ADDED})
	h.WaitLog(t, "cannot dial the node's Hubble server")
	if errs := flowsourcetest.Read(h.Tel).NodeErrors; errs != 1 {
		t.Errorf("node errors %d, want 1", errs)
	}
	waitFor(t, "worker-9's gap", func() bool { return slices.Equal(h.Gaps(), []string{"node_unreadable worker-9 0"}) })
}

// TestDeletedNodeIsForgotten: when the Peer service removes a node, the
// replica drops its checkpoint (which every renewal would publish again), and
// a batch that the pipeline takes afterwards does not bring it back.
func TestDeletedNodeIsForgotten(t *testing.T) {
	flows := threeNodeFlows()
	c, cfg := clusterSetup(t, flows, "worker-1", "worker-2", "worker-3")
	_, r, e := startMember(t, cfg, func(string) bool { return true })
	waitReading(t, r, "worker-1", "worker-2", "worker-3")
	waitFor(t, "every node checkpointed", func() bool {
		for _, n := range []string{"worker-1", "worker-2", "worker-3"} {
			if _, ok := e.CheckpointOf(n); !ok {
				return false
			}
		}
		return true
	})
	c.DeleteNode("worker-2")
	waitReading(t, r, "worker-1", "worker-3")
	if !slices.Contains(e.Forgotten(), "worker-2") {
		t.Fatalf("forgotten %v, want worker-2", e.Forgotten())
	}
	// New flows of the nodes left: their checkpoints move on, worker-2's
	// stays gone.
	before, _ := e.CheckpointOf("worker-1")
	c.Push(onNode("worker-1", dataplanetest.NewHubbleConnection(frontend, orders, 43001, 8080, dataplanetest.ConnectionDenied))...)
	waitFor(t, "worker-1's new checkpoint", func() bool {
		cp, _ := e.CheckpointOf("worker-1")
		return cp.After(before)
	})
	if cp, ok := e.CheckpointOf("worker-2"); ok {
		t.Fatalf("worker-2's checkpoint %v is back after its removal", cp)
	}
}

// TestBatchAfterRemovalDoesNotCheckpoint: the pipeline holds a batch of a
// node's flows while the Peer service removes the node; once the pipeline
// takes it, the node's checkpoint is not written again.
func TestBatchAfterRemovalDoesNotCheckpoint(t *testing.T) {
	flows := onNode("worker-2", dataplanetest.NewHubbleConnection(frontend, orders, 40001, 8080, dataplanetest.ConnectionDenied))
	c, cfg := clusterSetup(t, flows, "worker-1", "worker-2")
	g := startGated(t, cfg)
	e, h := g.e, g.h
	<-g.entered // the pipeline holds the batch of worker-2's record
	c.DeleteNode("worker-2")
	waitFor(t, "worker-2 forgotten", func() bool { return slices.Contains(e.Forgotten(), "worker-2") })
	g.open()
	h.WaitRecords(t, 1)
	// The batch's marks are handed on after the records: wait for the
	// delivery goroutine to pass them by flushing behind them.
	g.r.Flush()
	if cp, ok := e.CheckpointOf("worker-2"); ok {
		t.Fatalf("worker-2's checkpoint %v came back after its removal", cp)
	}
}

// gated is a nodes-mode receiver with a fake enforcer whose pipeline holds
// each batch until open: entered receives when a batch reaches it.
type gated struct {
	r       *hubbleReceiver
	e       *enforcerextensiontest.Enforcer
	h       *flowsourcetest.Harness
	entered chan struct{}
	open    func()
}

func startGated(t *testing.T, cfg *Config) gated {
	t.Helper()
	id := component.MustNewID("enforcer")
	cfg.Enforcer = &id
	e := enforcerextensiontest.New()
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	gate, entered := make(chan struct{}), make(chan struct{}, 16)
	next, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		entered <- struct{}{}
		<-gate
		return h.Sink.ConsumeLogs(ctx, ld)
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := newHubbleReceiver(set, cfg, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), e.Host(id)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() {
		open()
		_ = r.Shutdown(context.Background())
	})
	return gated{r: r, e: e, h: h, entered: entered, open: open}
}
