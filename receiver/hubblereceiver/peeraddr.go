package hubblereceiver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// hubbleServerPort is the port of a node's Hubble server when the Peer service
// announces an address without one, as Hubble Relay assumes.
const hubbleServerPort = "4244"

// nodeAddress returns the host:port at which to dial a node's Hubble server,
// from the address that the Peer service announces for it: an IP address (v4,
// or v6 with or without brackets) or a host name, with a port or without one
// (then Hubble's port, 4244). An empty address, a Unix socket (reachable only
// on its node) and anything else are errors.
func nodeAddress(addr string) (string, error) {
	switch {
	case addr == "":
		return "", errors.New("the Peer service announces no address")
	case strings.HasPrefix(addr, "unix://"), strings.HasPrefix(addr, "/"):
		return "", fmt.Errorf("address %q is a Unix socket, which only the node itself can reach", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// No port: an IP address, bracketed or not, or a host name.
		host, port = addr, hubbleServerPort
		if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
			host = addr[1 : len(addr)-1]
		}
	}
	if ip := net.ParseIP(host); ip == nil && (strings.HasPrefix(addr, "[") || !isHostName(host)) {
		return "", fmt.Errorf("invalid address %q: %q is neither an IP address nor a host name", addr, host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("invalid address %q: port %q is not a number from 1 to 65535", addr, port)
	}
	return net.JoinHostPort(host, port), nil
}

// isHostName reports whether s is a DNS name: dot-separated labels of
// letters, digits, hyphens and underscores, none empty, at most 253 bytes.
func isHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			default:
				return false
			}
		}
	}
	return true
}
