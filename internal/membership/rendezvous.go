package membership

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"strings"
)

// Rendezvous (highest random weight) hashing: each key goes to the member
// whose weight for it is the highest. Every replica computes the same owner
// from the same members, with no coordination, and a member that comes or
// goes moves only the keys that it wins or won.

// rendezvousWeight is the weight of member for key: FNV-1a 64 of the member,
// a separator and the key, finished with splitmix64's mixer so that the
// weights of similar names are spread over all 64 bits. It is the same in
// every process.
func rendezvousWeight(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rendezvousOwner returns the member that owns key, "" when there are no
// members. A tie of weights goes to the smaller identity.
func rendezvousOwner(members []string, key string) string {
	var owner string
	var best uint64
	for i, m := range members {
		w := rendezvousWeight(m, key)
		if i == 0 || w > best || (w == best && m < owner) {
			owner, best = m, w
		}
	}
	return owner
}

// maxNameLength is the longest name of a member Lease, and of the value of
// its member-of label: a label value's limit.
const maxNameLength = 63

// shortName returns s when it has at most maxNameLength characters (an object
// name or a label value); else its first characters and a hash of the whole,
// maxNameLength characters in all, so that two
// long names that share their beginning stay distinct. The cut keeps the
// name valid: it ends in a letter or a digit before the hash.
func shortName(s string) string {
	const limit = maxNameLength
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(s[:limit-len(suffix)-1], "-.")
	return head + "-" + suffix
}

// memberLeaseName is the name of the membership Lease of replica, for the
// leader Lease leaseName.
func memberLeaseName(leaseName, replica string) string {
	return shortName(leaseName + "-member-" + replica)
}
