package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// goldmaneTLS is where the pod's Secret is mounted: Goldmane's key pair and
// the CA that its clients' certificates must chain to.
const goldmaneTLS = "/etc/goldmane/tls/"

// goldmane serves Calico Goldmane's Flows service on :7443 with mutual TLS
// only, as Goldmane does, with the flows POSTed to :8081/flows as protojson
// FlowResult lines, and says on :8081/streams how many streams opened.
func goldmane() error {
	pair, err := tls.LoadX509KeyPair(goldmaneTLS+"tls.crt", goldmaneTLS+"tls.key")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(goldmaneTLS + "ca.crt")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no CA in %sca.crt", goldmaneTLS)
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	fake := dataplanetest.NewGoldmane(nil)
	srv := grpc.NewServer(grpc.Creds(creds))
	pb.RegisterFlowsServer(srv, fake)
	lis, err := net.Listen("tcp", ":7443")
	if err != nil {
		return err
	}
	go func() { log.Fatal(srv.Serve(lis)) }()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /flows", func(w http.ResponseWriter, r *http.Request) {
		flows, err := readMessages(r.Body, func() *pb.FlowResult { return &pb.FlowResult{} })
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fake.Push(flows...)
		log.Printf("pushed %d flows", len(flows))
		fmt.Fprintln(w, len(flows))
	})
	mux.HandleFunc("GET /streams", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", len(fake.Requests()))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return http.ListenAndServe(":8081", mux)
}
