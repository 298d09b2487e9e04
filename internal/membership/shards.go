package membership

import (
	"context"
	"hash/fnv"
	"maps"
	"strconv"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// A replica's checkpoints, released keys and (on the leader) counts hold for
// every key, however many: they are split by a hash of the key into shards,
// each a Lease of the member's group with the same three annotations,
// labelled with v1alpha1.ShardOfLabel and numbered from 0. The membership
// Lease holds none of them: it is renewed every retry period, and a renewal
// that carried every checkpoint would write them all each time. A renewal
// writes the shards that changed, when it publishes them (a claim, a release,
// a count, or a lease duration since the last), then the membership Lease,
// which says how many shards there are (v1alpha1.ShardsAnnotation): the
// replicas watch every Lease of the group through one watch, whose events
// come in the order of the writes, so a replica that sees a renewal has seen
// the shards written before it. The membership Lease's own annotations are
// still read, as those of one more shard: a replica of an earlier release
// kept its checkpoints there.

const (
	// shardTargetBytes is what the annotations of one shard should hold at
	// most: the shards are as many as that asks for, a power of two. An
	// entry is about 65 bytes for a checkpoint and as much for a count with
	// a node name of 25 characters, so a shard holds about 1,500 keys'
	// checkpoints or 750 keys' checkpoints and counts.
	shardTargetBytes = 96 << 10
	// shardMaxBytes is the most that one shard's annotations may take, well
	// inside the 256 KiB that the API server allows an object's annotations:
	// a shard that the hash fills past it doubles the shards.
	shardMaxBytes = 192 << 10
	// maxShards bounds the shards of one replica: 1,024 of about 96 KiB hold
	// some 750,000 keys' checkpoints and counts, far beyond any cluster.
	maxShards = 1024
	// entryOverhead is what an entry adds to its key's length in the
	// estimate: quotes, a colon, a comma and an RFC 3339 time.
	entryOverhead = 40
)

// shard is what one shard publishes: the values of its three annotations.
type shard struct {
	checkpoints, released, counted string
}

func (s shard) size() int { return len(s.checkpoints) + len(s.released) + len(s.counted) }

// shardOf is the shard of key among n, a power of two.
func shardOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() & uint32(n-1))
}

// splitShards splits the checkpoints, the released keys and the counts into
// shards: as few as keep each within shardTargetBytes, a power of two, and
// more while one is past shardMaxBytes, up to maxShards.
func splitShards(checkpoints, released, counted map[string]time.Time) []shard {
	estimate := 0
	for k := range checkpoints {
		estimate += len(k) + entryOverhead
	}
	for k := range released {
		estimate += len(k) + 3
	}
	for k := range counted {
		estimate += len(k) + entryOverhead
	}
	n := 1
	for n < maxShards && estimate/n > shardTargetBytes {
		n *= 2
	}
	for {
		out := splitInto(n, checkpoints, released, counted)
		biggest := 0
		for _, s := range out {
			biggest = max(biggest, s.size())
		}
		if biggest <= shardMaxBytes || n >= maxShards {
			return out
		}
		n *= 2
	}
}

// splitInto splits into n shards.
func splitInto(n int, checkpoints, released, counted map[string]time.Time) []shard {
	part := func(c map[string]time.Time) []map[string]time.Time {
		parts := make([]map[string]time.Time, n)
		if n == 1 {
			parts[0] = c
			return parts
		}
		for i := range parts {
			parts[i] = map[string]time.Time{}
		}
		for k, t := range c {
			parts[shardOf(k, n)][k] = t
		}
		return parts
	}
	cs, rs, ns := part(checkpoints), part(released), part(counted)
	out := make([]shard, n)
	for i := range out {
		out[i] = shard{checkpoints: formatCheckpoints(cs[i]), released: formatReleased(rs[i]), counted: formatCheckpoints(ns[i])}
	}
	return out
}

// setShard sets the three annotations of l to what s publishes.
func setShard(l *coordinationv1.Lease, s shard) {
	setAnnotation(l, v1alpha1.CheckpointsAnnotation, s.checkpoints)
	setAnnotation(l, v1alpha1.ReleasedAnnotation, s.released)
	setAnnotation(l, v1alpha1.CountedAnnotation, s.counted)
}

// shardLeaseName is the name of shard i (from 0) of membership Lease lease.
func shardLeaseName(lease string, i int) string {
	return shortName(lease + "-shard-" + strconv.Itoa(i))
}

// shardsOf is how many shards membership Lease l says it has, 1 when it
// says nothing that reads.
func shardsOf(l *coordinationv1.Lease) int {
	n, err := strconv.Atoi(l.Annotations[v1alpha1.ShardsAnnotation])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// shardIndex is the index of shard Lease l, and whether it is a shard.
func shardIndex(l *coordinationv1.Lease) (string, int, bool) {
	of, ok := l.Labels[v1alpha1.ShardOfLabel]
	if !ok {
		return "", 0, false
	}
	i, err := strconv.Atoi(l.Labels[v1alpha1.ShardLabel])
	if err != nil || i < 0 {
		return of, 0, false
	}
	return of, i, true
}

// writeShards writes the shards of out that changed since they were last
// written, owned as the membership Lease is; it returns the indexes of those
// it could not write. An empty shard never written is not created. Only the
// renewing goroutine calls it.
func (m *Membership) writeShards(ctx context.Context, out []shard, owners []metav1.OwnerReference) map[int]bool {
	leases := m.cs.CoordinationV1().Leases(m.cfg.Namespace)
	var failed map[int]bool
	for i := range out {
		prev := m.ownShards[i]
		if prev != nil && shardOfLease(prev) == out[i] && ownersEqual(prev.OwnerReferences, owners) {
			continue
		}
		if prev == nil && out[i] == (shard{}) && len(out) == 1 {
			continue // nothing to publish yet
		}
		name := shardLeaseName(m.leaseName, i)
		if prev == nil {
			l, err := leases.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.cfg.Namespace}}
			case err != nil:
				m.logger.Warn("Cannot read a checkpoint shard", zap.String("lease", name), zap.Error(err))
				failed = setFailed(failed, i)
				continue
			}
			prev = l
		}
		l := prev.DeepCopy()
		l.Labels = map[string]string{v1alpha1.MemberOfLabel: m.group, v1alpha1.ShardOfLabel: m.leaseName, v1alpha1.ShardLabel: strconv.Itoa(i)}
		setShard(l, out[i])
		l.OwnerReferences = owners
		written, err := writeLease(ctx, leases, l)
		if err != nil {
			delete(m.ownShards, i) // read it again at the next renewal
			m.logger.Warn("Cannot write a checkpoint shard", zap.String("lease", name), zap.Error(err))
			failed = setFailed(failed, i)
			continue
		}
		m.ownShards[i] = written
	}
	return failed
}

func setFailed(f map[int]bool, i int) map[int]bool {
	if f == nil {
		f = map[int]bool{}
	}
	f[i] = true
	return f
}

// deleteStaleShards deletes this replica's shards from n on, once the
// membership Lease says that there are n: the watchers read them as nothing
// already. Only the renewing goroutine calls it.
func (m *Membership) deleteStaleShards(ctx context.Context, n int) {
	for i, l := range m.ownShards {
		if i < n {
			continue
		}
		err := m.cs.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, l.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			m.logger.Warn("Cannot delete a stale checkpoint shard", zap.String("lease", l.Name), zap.Error(err))
			continue
		}
		delete(m.ownShards, i)
	}
}

// loadEarlierShards reads the shards that an earlier run of this replica's
// collector wrote beside membership Lease l, and keeps their checkpoints as
// this replica's own: what it published stays published.
func (m *Membership) loadEarlierShards(ctx context.Context, l *coordinationv1.Lease) {
	for i := range shardsOf(l) {
		s, err := m.cs.CoordinationV1().Leases(m.cfg.Namespace).Get(ctx, shardLeaseName(m.leaseName, i), metav1.GetOptions{})
		if err != nil {
			continue
		}
		m.ownShards[i] = s
		m.keepEarlier(parseCheckpoints(s.Annotations[v1alpha1.CheckpointsAnnotation]))
	}
}

// keepEarlier keeps the checkpoints that an earlier run published, where
// they are newer than this run's.
func (m *Membership) keepEarlier(c map[string]time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, t := range c {
		if t.After(m.checkpoints[k]) {
			m.checkpoints[k] = t
		}
	}
}

// shardOfLease is what Lease l publishes.
func shardOfLease(l *coordinationv1.Lease) shard {
	return shard{checkpoints: l.Annotations[v1alpha1.CheckpointsAnnotation], released: l.Annotations[v1alpha1.ReleasedAnnotation],
		counted: l.Annotations[v1alpha1.CountedAnnotation]}
}

func ownersEqual(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID {
			return false
		}
	}
	return true
}

// publishedWithout is the snapshot of checkpoints that a renewal published:
// all but the keys of the shards that it could not write.
func publishedWithout(snapshot map[string]time.Time, n int, failed map[int]bool) map[string]time.Time {
	if len(failed) == 0 {
		return snapshot
	}
	out := maps.Clone(snapshot)
	for k := range out {
		if failed[shardOf(k, n)] {
			delete(out, k)
		}
	}
	return out
}

// memberOfLocked returns the membership Lease that Lease l publishes for:
// l itself, or for a shard its membership Lease in the cache; false for a
// shard whose membership Lease is gone or says that it has fewer shards
// (the deleted Lease's checkpoints are kept apart, from the shards as they
// stood when it was deleted).
func (m *Membership) memberOfLocked(l *coordinationv1.Lease) (*coordinationv1.Lease, bool) {
	of, i, isShard := shardIndex(l)
	if !isShard {
		if of != "" {
			return nil, false // a shard label that does not read
		}
		return l, true
	}
	obj, ok, err := m.informer.GetStore().GetByKey(m.cfg.Namespace + "/" + of)
	if err != nil || !ok {
		return nil, false
	}
	member, isLease := obj.(*coordinationv1.Lease)
	if !isLease || i >= shardsOf(member) {
		return nil, false
	}
	return member, true
}

// noteShard keeps shard Lease l as the watch delivered it, for the deletion
// of its membership Lease: the cache may have dropped it by the time the
// deletion's handler runs.
func (m *Membership) noteShard(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	if _, _, isShard := shardIndex(l); !isShard {
		return
	}
	m.mu.Lock()
	m.shards[l.Name] = l
	m.mu.Unlock()
}

// shardsOfLocked returns the shards of membership Lease l, as the watch last
// delivered them, that l says are current.
func (m *Membership) shardsOfLocked(l *coordinationv1.Lease) []*coordinationv1.Lease {
	var out []*coordinationv1.Lease
	n := shardsOf(l)
	for _, s := range m.shards {
		if of, i, ok := shardIndex(s); ok && of == l.Name && i < n {
			out = append(out, s)
		}
	}
	return out
}

// writeLease creates l when it was never written, else updates it.
func writeLease(ctx context.Context, leases coordinationv1client.LeaseInterface, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if l.ResourceVersion == "" {
		return leases.Create(ctx, l, metav1.CreateOptions{})
	}
	return leases.Update(ctx, l, metav1.UpdateOptions{})
}
