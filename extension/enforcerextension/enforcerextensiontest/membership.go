package enforcerextensiontest

import (
	"context"
	"time"
)

// The fake's membership and leader address, which a test sets.

// Owns asks the function that SetOwner set; every key is owned before.
func (e *Enforcer) Owns(key string) bool {
	e.mu.Lock()
	owns := e.owns
	e.mu.Unlock()
	return owns == nil || owns(key)
}

// OnMembersChanged registers fn, called by SetOwner.
func (e *Enforcer) OnMembersChanged(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.membersChanged = append(e.membersChanged, fn)
}

// SetOwner changes which keys this replica owns, as a change of members
// does, and calls the OnMembersChanged functions.
func (e *Enforcer) SetOwner(owns func(key string) bool) {
	e.mu.Lock()
	e.owns = owns
	fns := append([]func(){}, e.membersChanged...)
	e.mu.Unlock()
	for _, fn := range fns {
		go fn()
	}
}

// Checkpoint records t for key; CheckpointOf answers the newest.
func (e *Enforcer) Checkpoint(key string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checkpoints == nil {
		e.checkpoints = map[string]time.Time{}
	}
	if t.After(e.checkpoints[key]) {
		e.checkpoints[key] = t
	}
}

// Take is the checkpoint store's, for the sources that the leader reads and
// for the nodes alike: once Settled(key), it answers CountFrom(key) and claims
// key there, else at start. It writes no Lease.
func (e *Enforcer) Take(ctx context.Context, key string, start time.Time) (time.Time, bool, error) {
	for !e.Settled(key) {
		select {
		case <-ctx.Done():
			return time.Time{}, false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	t, ok := e.CountFrom(key)
	if ok {
		start = t
	}
	e.Checkpoint(key, start)
	return t, ok, nil
}

// CheckpointOf returns the newest checkpoint of key.
func (e *Enforcer) CheckpointOf(key string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.checkpoints[key]
	return t, ok
}

// Counted records that the leader took key's records up to t.
func (e *Enforcer) Counted(key string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counted == nil {
		e.counted = map[string]time.Time{}
	}
	if t.After(e.counted[key]) {
		e.counted[key] = t
	}
}

// CountedOf returns what Counted recorded of key.
func (e *Enforcer) CountedOf(key string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.counted[key]
	return t, ok
}

// CountFrom answers what Counted recorded of key, else its newest
// checkpoint: the fake's checkpoints have no writer that could be killed.
func (e *Enforcer) CountFrom(key string) (time.Time, bool) {
	if t, ok := e.CountedOf(key); ok {
		return t, true
	}
	return e.CheckpointOf(key)
}

// LeaderAddress answers what SetLeaderAddress set; the identity is
// "leader-at-<address>" unless SetLeaderIdentity set one.
func (e *Enforcer) LeaderAddress() (addr, identity string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	identity = e.leaderIdentity
	if identity == "" {
		identity = "leader-at-" + e.leaderAddress
	}
	return e.leaderAddress, identity, e.leaderAddress != ""
}

// SetLeaderAddress sets the address that LeaderAddress answers; "" is none.
func (e *Enforcer) SetLeaderAddress(addr string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leaderAddress = addr
}

// SetLeaderIdentity sets the leader's identity that LeaderAddress answers:
// a new one is a new leader process at the same address.
func (e *Enforcer) SetLeaderIdentity(identity string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leaderIdentity = identity
}

// Release records that the replica no longer reads key.
func (e *Enforcer) Release(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = append(e.released, key)
}

// Forget drops the checkpoint of key and records that it was forgotten.
func (e *Enforcer) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.checkpoints, key)
	e.forgotten = append(e.forgotten, key)
}

// Forgotten returns the keys forgotten, in order.
func (e *Enforcer) Forgotten() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.forgotten...)
}

// Released returns the keys released, in order.
func (e *Enforcer) Released() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.released...)
}

// Settled asks the function that SetSettled set; every key is settled before.
// Each call is counted (SettledAsked).
func (e *Enforcer) Settled(key string) bool {
	e.mu.Lock()
	settled := e.settled
	if e.settledAsked == nil {
		e.settledAsked = map[string]int{}
	}
	e.settledAsked[key]++
	e.mu.Unlock()
	return settled == nil || settled(key)
}

// SettledAsked returns how many times Settled was asked about key.
func (e *Enforcer) SettledAsked(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settledAsked[key]
}

// SetSettled sets which keys' checkpoints are final.
func (e *Enforcer) SetSettled(settled func(key string) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settled = settled
}

// PublishWritten keeps writer's marks, which WrittenThrough answers from,
// combined as the membership combines them.
func (e *Enforcer) PublishWritten(writer string, marks func() map[string]int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writtenMarks.Set(writer, marks)
}

// WrittenThrough answers the marks published, for the leader that
// LeaderAddress names.
func (e *Enforcer) WrittenThrough(sender string) (string, int64, bool) {
	_, leader, _ := e.LeaderAddress()
	e.mu.Lock()
	marks := e.writtenMarks.Marks()
	e.mu.Unlock()
	if marks == nil {
		return leader, 0, false
	}
	seq, ok := marks()[sender]
	return leader, seq, ok
}
