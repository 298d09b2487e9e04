package enforcerextension

import (
	"context"
	"time"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// Owns reports whether this replica reads key now.
func (e *enforcer) Owns(key string) bool { return e.membership.Owns(key) }

// OnMembersChanged registers fn; the first starts the membership.
func (e *enforcer) OnMembersChanged(fn func()) { e.membership.OnMembersChanged(fn) }

// Checkpoint records that every flow of key up to t was handed on.
func (e *enforcer) Checkpoint(key string, t time.Time) { e.membership.Checkpoint(key, t) }

// Take waits for key's previous reader's checkpoint and claims key.
func (e *enforcer) Take(ctx context.Context, key string, start time.Time) (time.Time, bool, error) {
	return e.membership.Take(ctx, key, start)
}

// Counted records that this replica, leading, took key's records up to t.
func (e *enforcer) Counted(key string, t time.Time) { e.membership.Counted(key, t) }

// Release publishes at once that this replica no longer reads key.
func (e *enforcer) Release(key string) { e.membership.Release(key) }

// Forget drops this replica's checkpoint of key, whose source is gone.
func (e *enforcer) Forget(key string) { e.membership.Forget(key) }

// PublishWritten sets where the leader's membership Lease reads how far
// writer wrote each reader's batches.
func (e *enforcer) PublishWritten(writer string, marks func() map[string]int64) {
	e.membership.PublishWritten(writer, marks)
}

// WrittenThrough returns how far the leader wrote sender's batches.
func (e *enforcer) WrittenThrough(sender string) (string, int64, bool) {
	return e.membership.WrittenThrough(sender)
}

// LeaderAddress returns the pod IP of the holder of the leader Lease, as this
// replica's elector last observed it: the holder's identity names its pod,
// which the shared cache holds, in the Lease's namespace.
func (e *enforcer) LeaderAddress() (addr, identity string, ok bool) {
	if e.resolver == nil {
		return "", "", false
	}
	identity = e.elector.Holder()
	name := leaderelectorextension.PodOfIdentity(identity)
	if name == "" {
		return "", "", false
	}
	p := e.resolver.stores.pod(e.elector.LeaseSettings().LeaseNamespace, name)
	if p == nil || p.finished() || len(p.ips) == 0 {
		return "", "", false
	}
	return p.ips[0], identity, true
}
