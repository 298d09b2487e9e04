package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// hubble serves, on :4244, what hubble-relay asks of each Cilium agent: Peer
// (this pod is the one node, at $POD_IP) and Observer, with the flows POSTed to
// :8081/flows as protojson GetFlowsResponse lines. The Observer applies the
// field_mask that hubble-relay hands on from its client, as the agent does
// (dataplanetest.HubbleRelay's GetFlows): the real relay does not apply it
// itself.
func hubble() error {
	podIP, node := os.Getenv("POD_IP"), os.Getenv("NODE_NAME")
	if podIP == "" || node == "" {
		return errors.New("POD_IP and NODE_NAME must be set")
	}
	obs := &observerServer{HubbleRelay: dataplanetest.NewHubbleRelay(nil), started: time.Now()}
	srv := grpc.NewServer()
	observer.RegisterObserverServer(srv, obs)
	peerpb.RegisterPeerServer(srv, &peerServer{node: node, addr: net.JoinHostPort(podIP, "4244")})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", ":4244")
	if err != nil {
		return err
	}
	go func() { log.Fatal(srv.Serve(lis)) }()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /flows", func(w http.ResponseWriter, r *http.Request) {
		batch, err := readMessages(r.Body, func() *observer.GetFlowsResponse { return &observer.GetFlowsResponse{} })
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, resp := range batch {
			resp.NodeName = node
			if f := resp.GetFlow(); f != nil {
				f.NodeName = node
			}
		}
		obs.seen.Add(uint64(len(batch)))
		obs.Push(batch...)
		log.Printf("pushed %d flows", len(batch))
		fmt.Fprintf(w, "%d\n", len(batch))
	})
	// How many GetFlows streams opened: a test sees the relay reconnect.
	mux.HandleFunc("GET /streams", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", len(obs.Requests()))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return http.ListenAndServe(":8081", mux)
}

// observerServer adds ServerStatus, which hubble-relay asks of each peer, to the
// project's Observer fake, whose GetFlows (field mask and all) it keeps.
type observerServer struct {
	*dataplanetest.HubbleRelay
	started time.Time
	seen    atomic.Uint64
}

func (o *observerServer) ServerStatus(context.Context, *observer.ServerStatusRequest) (*observer.ServerStatusResponse, error) {
	n := o.seen.Load()
	return &observer.ServerStatusResponse{NumFlows: n, MaxFlows: 4096, SeenFlows: n,
		UptimeNs: uint64(time.Since(o.started)), NumConnectedNodes: wrapperspb.UInt32(1)}, nil
}

// peerServer names one peer, this pod, and then holds the stream open.
type peerServer struct {
	peerpb.UnimplementedPeerServer
	node, addr string
}

func (p *peerServer) Notify(_ *peerpb.NotifyRequest, stream grpc.ServerStreamingServer[peerpb.ChangeNotification]) error {
	if err := stream.Send(&peerpb.ChangeNotification{Name: p.node, Address: p.addr, Type: peerpb.ChangeNotificationType_PEER_ADDED}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}
