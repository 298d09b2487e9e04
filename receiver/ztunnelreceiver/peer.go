package ztunnelreceiver

import (
	"crypto/sha256"
	"net/netip"
)

// peerKey is a connection's source address and port as the joiner keys it:
// the parsed address, which hashes and compares for less than its text and
// holds no memory (the joiner's maps of them are not traced by the garbage
// collector). Two lines join when their texts are equal, so an address is keyed
// by its parsed form only when its text is the one netip writes for it (as
// ztunnel writes them); any other text is keyed by a SHA-256 of itself, which
// is never equal to a parsed key.
type peerKey struct {
	addr [16]byte
	port uint16
	form peerForm
}

// peerForm says what a peerKey holds.
type peerForm uint8

const (
	peerIPv4 peerForm = iota + 1
	// peerIPv6 tells an IPv6 address from the same address mapped into IPv4:
	// their texts differ.
	peerIPv6
	// peerText: addr is the start of the text's SHA-256.
	peerText
)

// newPeerKey keys text, which netip parsed as ap.
func newPeerKey(ap netip.AddrPort, text string) peerKey {
	var buf [64]byte
	if ap.Addr().Zone() == "" && string(ap.AppendTo(buf[:0])) == text {
		form := peerIPv6
		if ap.Addr().Is4() {
			form = peerIPv4
		}
		return peerKey{addr: ap.Addr().As16(), port: ap.Port(), form: form}
	}
	sum := sha256.Sum256([]byte(text))
	k := peerKey{form: peerText}
	copy(k.addr[:], sum[:])
	return k
}
