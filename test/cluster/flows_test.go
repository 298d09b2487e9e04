//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

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

// blocked reports whether the connection failed: Cilium drops the packets of
// a connection that a NetworkPolicy does not allow, and the dial times out.
func (d dial) blocked() bool { return d.Error != "" }

// connect makes the client pod open one fresh TCP connection to addr.
func connect(t *testing.T, client pod, addr string) dial {
	t.Helper()
	d, err := askConnect(client, addr)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// askConnect is connect for any goroutine: an error is that the pod did not
// answer, not that the connection failed.
func askConnect(client pod, addr string) (dial, error) {
	var d dial
	body, err := httpDo("GET", "http://"+net.JoinHostPort(client.IP, "8081")+"/connect?addr="+url.QueryEscape(addr), "")
	if err != nil {
		return d, fmt.Errorf("asking %s to connect: %w", client.Name, err)
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return d, fmt.Errorf("%s: %w", body, err)
	}
	return d, nil
}

// end is one pod of the journey as the data planes report it: pod, address,
// Deployment, Cilium identity, and the service account of its own that the
// journey's manifests give it.
func end(p pod, workload string, identity uint32) dataplanetest.End {
	return dataplanetest.End{Namespace: "shop", Pod: p.Name, IP: p.IP, Workload: workload, Identity: identity, ServiceAccount: workload}
}

// ztunnelReporter reports through the ztunnel pod, which prints each
// connection as the destination's ztunnel logs it, to its CRI log file,
// which the node agent tails.
func ztunnelReporter(ztunnel pod) reporter {
	return func(t *testing.T, src, dst dataplanetest.End, d dial, c dataplanetest.Connection) {
		t.Helper()
		lines := dataplanetest.NewZtunnelConnection(src, dst, uint32(d.LocalPort), 8080, c)
		post(t, ztunnel, "/lines", strings.Join(lines, "\n"))
	}
}

// goldmaneReporter reports through the Goldmane pod, which streams each
// connection to the enforcer as the destination's flow.
func goldmaneReporter(goldmane pod) reporter {
	return func(t *testing.T, src, dst dataplanetest.End, _ dial, c dataplanetest.Connection) {
		t.Helper()
		line, err := protojson.Marshal(dataplanetest.NewGoldmaneFlow(src, dst, 8080, c))
		if err != nil {
			t.Fatal(err)
		}
		post(t, goldmane, "/flows", string(line))
	}
}

// post sends lines to a data plane pod's control port.
func post(t *testing.T, p pod, path, lines string) {
	t.Helper()
	if _, err := httpDo("POST", "http://"+net.JoinHostPort(p.IP, "8081")+path, lines); err != nil {
		t.Fatalf("reporting connections to %s: %v", p.Name, err)
	}
}

// streams is how many flow streams the data plane pod has opened (Goldmane's
// to the enforcer): a new one is a reader that connected.
func streams(t *testing.T, p pod) int {
	t.Helper()
	out, err := httpDo("GET", "http://"+net.JoinHostPort(p.IP, "8081")+"/streams", "")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("%s's stream count %q: %v", p.Name, out, err)
	}
	return n
}
