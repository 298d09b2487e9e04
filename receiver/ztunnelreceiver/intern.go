package ztunnelreceiver

import (
	"strings"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// maxInterned bounds each table of an interner: past it the table starts over,
// so that a stream of ever new names cannot grow it without limit.
const maxInterned = 4096

// endpoint is one end of a connection as a line names it, without its port:
// the few pods of a node make the same ends again and again, so each is kept
// once and events point to it.
type endpoint struct {
	Address, Namespace, Pod, Identity string
}

// interner keeps one copy of each end and each policy that lines name. What
// it hands out owns its memory: a line's fields may share the memory of the
// request that carried it, which the joiner must not keep for its window. It
// is not safe for concurrent use: each batch of lines takes one from a pool.
type interner struct {
	ends     map[endpoint]*endpoint
	policies map[flow.PolicyRef]*flow.PolicyRef
}

func newInterner() *interner {
	return &interner{ends: map[endpoint]*endpoint{}, policies: map[flow.PolicyRef]*flow.PolicyRef{}}
}

// endpoint returns the kept copy of e.
func (n *interner) endpoint(e endpoint) *endpoint {
	if kept, ok := n.ends[e]; ok {
		return kept
	}
	if len(n.ends) >= maxInterned {
		clear(n.ends)
	}
	parts := cloneAll(e.Address, e.Namespace, e.Pod, e.Identity)
	kept := &endpoint{Address: parts[0], Namespace: parts[1], Pod: parts[2], Identity: parts[3]}
	n.ends[*kept] = kept
	return kept
}

// policy returns the kept copy of p, or nil when p names no policy.
func (n *interner) policy(p flow.PolicyRef) *flow.PolicyRef {
	if p.IsZero() {
		return nil
	}
	if kept, ok := n.policies[p]; ok {
		return kept
	}
	if len(n.policies) >= maxInterned {
		clear(n.policies)
	}
	parts := cloneAll(p.Kind, p.Namespace, p.Name)
	kept := &flow.PolicyRef{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	n.policies[*kept] = kept
	return kept
}

// cloneAll copies ss into one new string and returns its parts: one allocation
// for all of them.
func cloneAll(ss ...string) []string {
	var b strings.Builder
	total := 0
	for _, s := range ss {
		total += len(s)
	}
	b.Grow(total)
	for _, s := range ss {
		b.WriteString(s)
	}
	all := b.String()
	out := make([]string, len(ss))
	off := 0
	for i, s := range ss {
		out[i] = all[off : off+len(s)]
		off += len(s)
	}
	return out
}
