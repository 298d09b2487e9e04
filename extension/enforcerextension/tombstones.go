package enforcerextension

import (
	"sync"
	"time"
)

// DefaultPodGracePeriod is how long a deleted pod stays resolvable by its
// name and its addresses: longer than the five minutes of history that
// Hubble Relay hands a reader at start, and than Goldmane's aggregation, so
// that a flow that arrives late still finds the pod that made it.
const DefaultPodGracePeriod = 10 * time.Minute

// tombstones keeps the pods that were deleted, for a grace period, with the
// time each ended: a flow arrives after its pod is gone (a relay's backfill,
// a connection logged when it closes), and its pod's address may already
// belong to another pod. contrib's k8sattributesprocessor keeps deleted pods
// for the same reason. Without them, a late flow would find no pod, or the
// new holder of the address.
type tombstones struct {
	grace time.Duration
	now   func() time.Time

	mu sync.RWMutex
	// since is when the cache started to see deletions: before it, a pod
	// that ended is not known.
	since  time.Time
	byName map[string]*podInfo
	byIP   map[string][]*podInfo
	// byGenerateName holds the newest deleted pod of each
	// "<namespace>/<generateName>", for Goldmane's aggregates.
	byGenerateName map[string]*podInfo
	// order holds the tombstones in the order they were added; expire
	// walks it from the oldest. A pod that finished long before its
	// deletion may stay past its grace period until those before it go:
	// the lookups check the period themselves.
	order []*podInfo
}

func newTombstones(grace time.Duration, now func() time.Time) *tombstones {
	return &tombstones{grace: grace, now: now, since: now(), byName: map[string]*podInfo{}, byIP: map[string][]*podInfo{},
		byGenerateName: map[string]*podInfo{}}
}

// deleted keeps p, which the cache saw deleted at now, for the grace period.
// Its end is when it finished, if it did, else now.
func (t *tombstones) deleted(p *podInfo) {
	now := t.now()
	q := *p
	if q.ended.IsZero() {
		q.ended = now
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	t.byName[q.Namespace+"/"+q.Name] = &q
	if q.GenerateName != "" {
		t.byGenerateName[q.Namespace+"/"+q.GenerateName] = &q
	}
	for _, ip := range q.ips {
		t.byIP[ip] = append(t.byIP[ip], &q)
	}
	t.order = append(t.order, &q)
}

// expire forgets the tombstones whose grace period is over. Called with the
// lock held.
func (t *tombstones) expire(now time.Time) {
	n := 0
	for _, p := range t.order {
		if now.Sub(p.ended) <= t.grace {
			break
		}
		n++
		if t.byName[p.Namespace+"/"+p.Name] == p {
			delete(t.byName, p.Namespace+"/"+p.Name)
		}
		if t.byGenerateName[p.Namespace+"/"+p.GenerateName] == p {
			delete(t.byGenerateName, p.Namespace+"/"+p.GenerateName)
		}
		for _, ip := range p.ips {
			t.byIP[ip] = without(t.byIP[ip], p)
			if len(t.byIP[ip]) == 0 {
				delete(t.byIP, ip)
			}
		}
	}
	t.order = t.order[n:]
}

func without(ps []*podInfo, p *podInfo) []*podInfo {
	out := ps[:0]
	for _, q := range ps {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// pod returns the deleted pod namespace/name within its grace period.
func (t *tombstones) pod(namespace, name string) *podInfo {
	return t.lookup(t.byName, namespace+"/"+name)
}

// generated returns the newest deleted pod of namespace/generateName
// within its grace period.
func (t *tombstones) generated(namespace, generateName string) *podInfo {
	return t.lookup(t.byGenerateName, namespace+"/"+generateName)
}

func (t *tombstones) lookup(m map[string]*podInfo, key string) *podInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := m[key]
	if p == nil || t.now().Sub(p.ended) > t.grace {
		return nil
	}
	return p
}

// withIP appends to out the deleted pods within their grace period that
// had ip.
func (t *tombstones) withIP(out []*podInfo, ip string) []*podInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	now := t.now()
	for _, p := range t.byIP[ip] {
		if now.Sub(p.ended) <= t.grace {
			out = append(out, p)
		}
	}
	return out
}

// remembersFrom is the oldest time for which the cache knows every pod
// that held an address: the start of its watch, or the grace period ago.
func (t *tombstones) remembersFrom() time.Time {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return later(t.since, t.now().Add(-t.grace))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
