// Package dataplanetest serves recorded flows over the data planes' own gRPC APIs: a
// Hubble Relay (Cilium's Observer service), a Cilium cluster's node Hubble servers
// and Peer service (HubbleCluster), and a Goldmane (Calico's Flows service) that
// replay the fixtures under testdata/. Tests, benchmarks and the demo use them
// in place of a cluster.
package dataplanetest

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// Fixture paths, relative to the repository root.
const (
	HubbleFixture   = "testdata/hubble/flows.jsonl"
	GoldmaneFixture = "testdata/goldmane/flows.jsonl"
)

// LoadHubble reads `hubble observe -o json` lines, gzip-compressed when the
// name ends in .gz.
func LoadHubble(path string) ([]*observer.GetFlowsResponse, error) {
	return loadLines(path, func() *observer.GetFlowsResponse { return &observer.GetFlowsResponse{} })
}

// LoadGoldmane reads Goldmane FlowResult messages in protojson, one a line.
func LoadGoldmane(path string) ([]*pb.FlowResult, error) {
	return loadLines(path, func() *pb.FlowResult { return &pb.FlowResult{} })
}

func loadLines[M proto.Message](path string, newMsg func() M) ([]M, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	var out []M
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		m := newMsg()
		if err := protojson.Unmarshal(sc.Bytes(), m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
