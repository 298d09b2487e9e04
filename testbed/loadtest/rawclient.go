package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// rawClientCommand, as the first argument, makes the loadtest a baseline
// client instead: it dials a data plane's API, reads a number of messages,
// each fully decoded, says so on stdout and waits to be ended. It runs as a
// process of its own so that its CPU time and peak memory are read from /proc
// as the enforcer's are; in the loadtest's process they would be mixed with
// the fake data plane's.
const rawClientCommand = "raw-client"

// rawClientDone is the line the raw client writes once it has read every
// message.
const rawClientDone = "done"

// rawClient is the raw-client command: args are its flags.
func rawClient(args []string) error {
	fs := flag.NewFlagSet(rawClientCommand, flag.ContinueOnError)
	api := fs.String("api", "", "hubble (Observer.GetFlows) or goldmane (Flows.Stream)")
	addr := fs.String("addr", "", "the server's host:port")
	serverName := fs.String("server-name", "", "the name in the server's certificate")
	caFile := fs.String("ca", "", "the CA of the server's certificate")
	certFile := fs.String("cert", "", "the client certificate")
	keyFile := fs.String("key", "", "the client certificate's key")
	messages := fs.Int("messages", 0, "how many messages to read")
	backfill := fs.Duration("backfill", time.Hour, "how far back to ask for flows")
	fieldMask := fs.String("field-mask", "", "hubble: comma-separated paths of the request's field_mask; empty: none")
	timeout := fs.Duration("timeout", 5*time.Minute, "the longest the client lives")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", *caFile)
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: *serverName, MinVersion: tls.VersionTLS12,
	})))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()

	var recv func() error
	switch *api {
	case "hubble":
		req := &observer.GetFlowsRequest{Follow: true, Since: timestamppb.New(time.Now().Add(-*backfill))}
		if *fieldMask != "" {
			req.FieldMask = &fieldmaskpb.FieldMask{Paths: strings.Split(*fieldMask, ",")}
		}
		stream, err := observer.NewObserverClient(conn).GetFlows(ctx, req)
		if err != nil {
			return err
		}
		recv = func() error { _, err := stream.Recv(); return err }
	case "goldmane":
		stream, err := pb.NewFlowsClient(conn).Stream(ctx, &pb.FlowStreamRequest{
			StartTimeGte: -int64(*backfill / time.Second), AggregationInterval: 15})
		if err != nil {
			return err
		}
		recv = func() error { _, err := stream.Recv(); return err }
	default:
		return fmt.Errorf("unknown -api %q: want hubble or goldmane", *api)
	}
	for i := range *messages {
		if err := recv(); err != nil {
			return fmt.Errorf("message %d of %d: %w", i+1, *messages, err)
		}
	}
	fmt.Println(rawClientDone)
	// Alive until the loadtest has read the CPU time and peak memory of the
	// process and ends it: /proc has neither once it has exited.
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("not ended in time")
	}
	return nil
}
