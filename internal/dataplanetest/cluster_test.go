package dataplanetest

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// TestClusterAnnouncesAndServesItsNodes: the Peer service announces each
// node with its address and TLS server name, then each change; each node
// serves, over mutual TLS under its server name, the flows of its name only;
// a broken stream ends with an error.
func TestClusterAnnouncesAndServesItsNodes(t *testing.T) {
	client := End{Namespace: "shop", Pod: "web-0", IP: "10.0.0.1", Workload: "web", Identity: 1001}
	server := End{Namespace: "shop", Pod: "db-0", IP: "10.0.0.2", Workload: "db", Identity: 1002}
	flows := NewHubbleConnection(client, server, 40000, 5432, ConnectionDenied)
	for i, resp := range flows {
		if i%3 == 1 {
			resp.NodeName = "worker-2"
			resp.GetFlow().NodeName = "worker-2"
		}
	}
	ca := certtest.NewCA(t, "cilium-ca")
	c, err := NewHubbleCluster(ca, flows, "worker-1", "worker-2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	peers := peerpb.NewPeerClient(dialTLS(t, c, c.PeerAddr, PeerServerName))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	notify, err := peers.Notify(ctx, &peerpb.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recvChange := func() *peerpb.ChangeNotification {
		t.Helper()
		cn, err := notify.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return cn
	}
	for _, name := range []string{"worker-1", "worker-2"} {
		cn := recvChange()
		want := &peerpb.ChangeNotification{Name: name, Address: c.Node(name).Addr, Type: peerpb.ChangeNotificationType_PEER_ADDED,
			Tls: &peerpb.TLS{ServerName: name + ".default.hubble-grpc.cilium.io"}}
		if !proto.Equal(cn, want) {
			t.Fatalf("announced %v, want %v", cn, want)
		}
	}

	for _, name := range []string{"worker-1", "worker-2"} {
		n := c.Node(name)
		stream, err := observer.NewObserverClient(dialTLS(t, c, n.Addr, n.ServerName)).GetFlows(ctx, &observer.GetFlowsRequest{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, resp := range flows {
			if resp.GetNodeName() == name {
				want++
			}
		}
		for range want {
			resp, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetNodeName() != name {
				t.Fatalf("%s served a flow of %s", name, resp.GetNodeName())
			}
		}
		n.Break()
		if resp, err := stream.Recv(); err == nil {
			t.Fatalf("%s: after a break, got %v; want an error", name, resp)
		}
	}

	if err := c.MoveNode("worker-1"); err != nil {
		t.Fatal(err)
	}
	if cn := recvChange(); cn.GetType() != peerpb.ChangeNotificationType_PEER_UPDATED || cn.GetAddress() != c.Node("worker-1").Addr {
		t.Fatalf("after a move, announced %v", cn)
	}
	c.DeleteNode("worker-2")
	if cn := recvChange(); cn.GetType() != peerpb.ChangeNotificationType_PEER_DELETED || cn.GetName() != "worker-2" {
		t.Fatalf("after a delete, announced %v", cn)
	}
	if _, err := c.AddNode("worker-3"); err != nil {
		t.Fatal(err)
	}
	if cn := recvChange(); cn.GetType() != peerpb.ChangeNotificationType_PEER_ADDED || cn.GetName() != "worker-3" {
		t.Fatalf("after an add, announced %v", cn)
	}
	c.Peer.Break()
	if cn, err := notify.Recv(); err == nil {
		t.Fatalf("after a break, got %v; want an error", cn)
	}
}

// dialTLS connects to addr with the cluster's client certificate, verifying
// serverName.
func dialTLS(t *testing.T, c *HubbleCluster, addr, serverName string) *grpc.ClientConn {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{c.Client.TLS}, RootCAs: c.CA.Pool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
