package dataplanetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/encoding/protojson"
)

// realRecording is what a real Cilium agent v1.20.2 emitted on the real node.
const realRecording = "../../testdata/hubble/cilium-1.20/probe.jsonl"

// TestFakeConnectionsMatchTheRealAgent holds the fake's connections to the
// real agent's: for an allowed, a denied and an unenforced connection (before
// the policy) of the recording, the
// fake emits the same events in the same order (event type, observation
// point, conntrack reason, reply, direction, verdict, TCP flags, drop reason),
// each with the same set of fields.
func TestFakeConnectionsMatchTheRealAgent(t *testing.T) {
	recorded, err := LoadHubble(realRecording)
	if err != nil {
		t.Fatal(err)
	}
	client := End{Namespace: "probe", Pod: "client-5d8f7c9b4-qw7lm", IP: "10.217.0.16", Workload: "client", Identity: 28193}
	server := End{Namespace: "probe", Pod: "server-7748bbfff4-7znhg", IP: "10.217.0.230", Workload: "server", Identity: 20356}
	for _, c := range []struct {
		name string
		port uint32 // the client port of a connection of that kind in the recording
		kind Connection
	}{
		{"allowed", 48804, ConnectionAllowed},
		{"denied", 38664, ConnectionDenied},
		{"unenforced", 56700, ConnectionUnenforced},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := describeAll(t, ofConnection(recorded, c.port))
			got := describeAll(t, NewHubbleConnection(client, server, c.port, 8080, c.kind))
			if len(want) == 0 {
				t.Fatalf("no flows of client port %d in the recording", c.port)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the fake's %s connection:\n  %s\nthe real agent's:\n  %s", c.name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// ofConnection picks the flows of the TCP connection from client port port.
func ofConnection(all []*observer.GetFlowsResponse, port uint32) []*observer.GetFlowsResponse {
	var out []*observer.GetFlowsResponse
	for _, r := range all {
		tcp := r.GetFlow().GetL4().GetTCP()
		if tcp != nil && (tcp.GetSourcePort() == port || tcp.GetDestinationPort() == port) {
			out = append(out, r)
		}
	}
	return out
}

// describeAll writes each flow as its kind and its set of fields.
func describeAll(t *testing.T, flows []*observer.GetFlowsResponse) []string {
	t.Helper()
	var out []string
	for _, r := range flows {
		f := r.GetFlow()
		kind := fmt.Sprintf("type=%d/%d point=%s reason=%s reply=%v direction=%s verdict=%s flags=%v drop=%s",
			f.GetEventType().GetType(), f.GetEventType().GetSubType(), f.GetTraceObservationPoint(), f.GetTraceReason(),
			f.GetIsReply(), f.GetTrafficDirection(), f.GetVerdict(), f.GetL4().GetTCP().GetFlags(), f.GetDropReasonDesc())
		b, err := protojson.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, kind+" fields="+strings.Join(fieldPaths("", v), ","))
	}
	return out
}

// unstable are fields that the agent sets only once it knows them: its first
// connections in the recording name their interface by index alone.
var unstable = map[string]bool{".flow.interface.name": true}

// fieldPaths lists the paths of every field set in a JSON value; the
// elements of a list share the path of the list.
func fieldPaths(prefix string, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			p := prefix + "." + k
			if unstable[p] {
				continue
			}
			out = append(out, p)
			out = append(out, fieldPaths(p, sub)...)
		}
	case []any:
		for _, sub := range v {
			out = append(out, fieldPaths(prefix+"[]", sub)...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
