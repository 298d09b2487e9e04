//go:build cluster

package cluster

import (
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// dial is a client pod's answer to /connect (test/cluster/testpod).
type dial struct {
	LocalPort int    `json:"localPort"`
	Local     string `json:"local"`
	Remote    string `json:"remote"`
	Reply     string `json:"reply"`
	Error     string `json:"error"`
}

func (d dial) ok() bool { return d.Error == "" && strings.HasPrefix(d.Reply, "ok") }

// refused reports whether the connection was refused: kube-router rejects a
// connection that a NetworkPolicy does not allow with an ICMP port unreachable.
func (d dial) refused() bool { return strings.Contains(d.Error, "connection refused") }

// connect makes the client pod open one fresh TCP connection to addr.
func connect(t *testing.T, client pod, addr string) dial {
	t.Helper()
	body, err := httpDo("GET", "http://"+net.JoinHostPort(client.IP, "8081")+"/connect?addr="+url.QueryEscape(addr), "")
	if err != nil {
		t.Fatalf("asking %s to connect: %v", client.Name, err)
	}
	var d dial
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return d
}

// end is one pod of the journey, as a Hubble endpoint.
func end(p pod, workload string, identity uint32) dataplanetest.HubbleEnd {
	return dataplanetest.HubbleEnd{Namespace: "shop", Pod: p.Name, IP: p.IP, Workload: workload, Identity: identity}
}

// report hands a connection that the test made to the Hubble agent pod, which
// serves it to the real relay as the destination node's flow: the test's own
// connection log, with the connection's real addresses.
func report(t *testing.T, agent pod, flows ...*observer.GetFlowsResponse) {
	t.Helper()
	var b strings.Builder
	for _, f := range flows {
		line, err := protojson.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := httpDo("POST", "http://"+net.JoinHostPort(agent.IP, "8081")+"/flows", b.String()); err != nil {
		t.Fatalf("reporting flows: %v", err)
	}
}

// flowOf is what a Cilium agent emits for a connection from src to dst's
// port: before any policy (no verdict), or refused by one (three attempts).
func flowOf(src, dst dataplanetest.HubbleEnd, d dial, dstPort uint32, dropped bool) []*observer.GetFlowsResponse {
	kind := dataplanetest.ConnectionUnenforced
	if dropped {
		kind = dataplanetest.ConnectionDenied
	}
	return dataplanetest.NewHubbleConnection(src, dst, uint32(d.LocalPort), dstPort, kind)
}

func streams(t *testing.T, agent pod) string {
	t.Helper()
	out, err := httpDo("GET", "http://"+net.JoinHostPort(agent.IP, "8081")+"/streams", "")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}
