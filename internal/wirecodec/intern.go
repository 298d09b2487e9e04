package wirecodec

import "unicode/utf8"

// Interner returns one string for equal byte strings: a stream's flows name
// the same namespaces, pods, workloads, labels and addresses again and again,
// and a string made once costs no allocation the next times. It holds at most
// a bounded number of strings, and starts afresh past it, so that a cluster's
// churn (pod addresses, names) cannot grow it without limit. It is used by
// one goroutine.
type Interner struct {
	strings map[string]string
	max     int
}

// DefaultInternerSize is the most strings an Interner holds before it starts
// afresh: far more than the distinct values of a batch of flows, a few MiB.
const DefaultInternerSize = 1 << 16

// NewInterner returns an Interner that holds at most size strings.
func NewInterner(size int) *Interner {
	return &Interner{strings: make(map[string]string, 1024), max: size}
}

// String returns b as a string, the same one as for every equal b before, or
// ErrInvalidUTF8.
func (in *Interner) String(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	if s, ok := in.strings[string(b)]; ok { // the conversion does not allocate
		return s, nil
	}
	if !utf8.Valid(b) {
		return "", ErrInvalidUTF8
	}
	if len(in.strings) >= in.max {
		clear(in.strings)
	}
	s := string(b)
	in.strings[s] = s
	return s, nil
}
