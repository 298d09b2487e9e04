package wirecodec

import (
	"hash/maphash"
	"slices"
	"unicode/utf8"
)

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

// Lists returns one slice for equal lists of interned strings: the label sets
// of a stream's flows repeat as their pods do. The slice it returns is shared,
// and must not be changed. It holds at most a bounded number of lists, and
// starts afresh past it. It is used by one goroutine.
type Lists struct {
	lists map[uint64][]string
	seed  maphash.Seed
	max   int
}

// NewLists returns a Lists that holds at most size lists.
func NewLists(size int) *Lists {
	return &Lists{lists: make(map[uint64][]string, 256), seed: maphash.MakeSeed(), max: size}
}

// List returns a shared copy of list, the same one as for every equal list
// before; nil for an empty list.
func (l *Lists) List(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	var h maphash.Hash
	h.SetSeed(l.seed)
	for _, s := range list {
		h.WriteString(s)
		h.WriteByte(0) // ["ab"] is not ["a", "b"]
	}
	k := h.Sum64()
	if held, ok := l.lists[k]; ok && slices.Equal(held, list) {
		return held
	}
	if len(l.lists) >= l.max {
		clear(l.lists)
	}
	held := slices.Clone(list)
	l.lists[k] = held
	return held
}
