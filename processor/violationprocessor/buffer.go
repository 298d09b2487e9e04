package violationprocessor

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// pending is what the buffer holds for one record between two status syncs.
type pending struct {
	// first and last are when the record was first and last observed.
	first, last time.Time
	// count is how many observations it stands for.
	count int64
}

// buffer holds the observations between two status syncs, per policy and
// record. A repeat of a buffered record only adds to its count, so the buffer
// grows with the distinct records, and it holds at most max of them.
type buffer struct {
	mu       sync.Mutex
	max      int
	n        int
	policies map[types.NamespacedName]map[recordKey]*pending
	// provider is the data plane of the latest observation: acknowledgement
	// events name it too.
	provider flow.Provider
}

func newBuffer(maxRecords int) *buffer {
	return &buffer{max: maxRecords, policies: map[types.NamespacedName]map[recordKey]*pending{}}
}

// add buffers an observation. ok is false when it is a new record and the
// buffer is full; first is true when it is the policy's first record since its
// last take, the moment to ask for its status sync.
func (b *buffer) add(o *observation) (ok, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.provider = o.provider
	records := b.policies[o.policy]
	if p, found := records[o.key]; found {
		p.count += o.count
		p.first, p.last = minTime(p.first, o.time), maxTime(p.last, o.time)
		return true, false
	}
	if b.n >= b.max {
		return false, false
	}
	if records == nil {
		records = map[recordKey]*pending{}
		b.policies[o.policy] = records
		first = true
	}
	records[o.key] = &pending{first: o.time, last: o.time, count: o.count}
	b.n++
	return true, first
}

// held returns the policies with buffered records.
func (b *buffer) held() []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(b.policies))
	for key, records := range b.policies {
		if len(records) > 0 {
			keys = append(keys, key)
		}
	}
	return keys
}

// take removes and returns what is buffered for one policy.
func (b *buffer) take(policy types.NamespacedName) map[recordKey]*pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.policies[policy]
	delete(b.policies, policy)
	b.n -= len(out)
	return out
}

// putBack returns what a failed status write took, so that the next sync tries
// again; what no longer fits is dropped and its count returned.
func (b *buffer) putBack(policy types.NamespacedName, records map[recordKey]*pending) (dropped int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	current := b.policies[policy]
	for k, p := range records {
		if c, ok := current[k]; ok {
			c.add(p)
			continue
		}
		if b.n >= b.max {
			dropped += p.count
			continue
		}
		if current == nil {
			current = map[recordKey]*pending{}
			b.policies[policy] = current
		}
		current[k] = p
		b.n++
	}
	return dropped
}

// add adds q's observations to p's.
func (p *pending) add(q *pending) {
	p.count += q.count
	p.first = minTime(p.first, q.first)
	p.last = maxTime(p.last, q.last)
}

// joinRecords adds more, records that a status write took from the buffer
// after those it holds, to records.
func joinRecords(records, more map[recordKey]*pending) map[recordKey]*pending {
	if len(records) == 0 {
		return more
	}
	for k, q := range more {
		if p, ok := records[k]; ok {
			p.add(q)
			continue
		}
		records[k] = q
	}
	return records
}

// providerSeen is the data plane of the latest observation.
func (b *buffer) providerSeen() flow.Provider {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.provider
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
