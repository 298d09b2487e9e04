package hubblereceiver

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// peerAddresses are addresses as the Peer service may announce them, and what
// the receiver dials, "" for an error.
var peerAddresses = []struct{ in, want string }{
	{"10.0.0.1:4244", "10.0.0.1:4244"},
	{"10.0.0.1", "10.0.0.1:4244"},
	{"10.0.0.1:4245", "10.0.0.1:4245"},
	{"[fd00::1]:4244", "[fd00::1]:4244"},
	{"fd00::1", "[fd00::1]:4244"},
	{"[fd00::1]", "[fd00::1]:4244"},
	{"worker-1.example.internal:4244", "worker-1.example.internal:4244"},
	{"worker-1", "worker-1:4244"},
	{"", ""},
	{"unix:///var/run/cilium/hubble.sock", ""},
	{"/var/run/cilium/hubble.sock", ""},
	{"10.0.0.1:http", ""},
	{"10.0.0.1:0", ""},
	{"10.0.0.1:65536", ""},
	{":4244", ""},
	{"[worker-1]:4244", ""},
	{"[worker-1]", ""},
	{"a b:4244", ""},
	{"worker..1", ""},
	{"worker-1]", ""},
	{"[fd00::1", ""},
}

func TestNodeAddress(t *testing.T) {
	for _, tc := range peerAddresses {
		got, err := nodeAddress(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("nodeAddress(%q) = %q, want an error", tc.in, got)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("nodeAddress(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzNodeAddress: whatever the Peer service announces, the parser does not
// panic, and an address it accepts is a host and a port from 1 to 65535 that
// it accepts again unchanged.
func FuzzNodeAddress(f *testing.F) {
	for _, tc := range peerAddresses {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := nodeAddress(in)
		if err != nil {
			return
		}
		host, port, err := net.SplitHostPort(got)
		if err != nil || host == "" || strings.ContainsAny(host, "/ ") {
			t.Fatalf("nodeAddress(%q) = %q: not host:port (%v)", in, got, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			t.Fatalf("nodeAddress(%q) = %q: bad port", in, got)
		}
		if again, err := nodeAddress(got); err != nil || again != got {
			t.Fatalf("nodeAddress(%q) = %q, then %q, %v", in, got, again, err)
		}
	})
}
