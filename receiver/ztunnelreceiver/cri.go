package ztunnelreceiver

import (
	"bytes"
	"sync"
)

// maxLineBytes bounds a line joined from CRI partial lines; ztunnel's lines are a
// few hundred bytes, so a longer one is not a ztunnel log line.
const maxLineBytes = 1 << 20

// parseCRI splits a container runtime (CRI) log line,
// "<RFC3339Nano time> <stdout|stderr> <P|F>[:tags] <content>". ok is false when b
// is not in that format.
func parseCRI(b []byte) (content []byte, partial, ok bool) {
	rest := b
	for range 2 { // the time and the stream
		i := bytes.IndexByte(rest, ' ')
		if i <= 0 {
			return nil, false, false
		}
		rest = rest[i+1:]
	}
	i := bytes.IndexByte(rest, ' ')
	if i < 0 { // an empty final line has no space after the tag
		i = len(rest)
	}
	tag := rest[:i]
	if len(tag) == 0 || (tag[0] != 'P' && tag[0] != 'F') || (len(tag) > 1 && tag[1] != ':') {
		return nil, false, false
	}
	if i < len(rest) {
		content = rest[i+1:]
	}
	return content, tag[0] == 'P', true
}

// partialLines joins CRI partial lines (tag P) with the final one (tag F), per
// source: a file, or whatever key a sender gives.
type partialLines struct {
	mu      sync.Mutex
	pending map[string][]byte
}

// add takes one CRI line's content. It returns the whole line once the final
// part arrives, and overflow when the parts so far exceed maxLineBytes (they are
// then discarded).
func (p *partialLines) add(key string, content []byte, partial bool) (whole []byte, done, overflow bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, joining := p.pending[key]
	if !partial && !joining {
		return content, true, false
	}
	if len(prev)+len(content) > maxLineBytes {
		delete(p.pending, key)
		return nil, false, true
	}
	joined := append(prev, content...) //nolint:gocritic // appendAssign: joined replaces prev in pending.
	if partial {
		if p.pending == nil {
			p.pending = map[string][]byte{}
		}
		p.pending[key] = joined
		return nil, false, false
	}
	delete(p.pending, key)
	return joined, true, false
}
