// Package membership shares keys (the Cilium nodes that the Hubble receiver
// reads directly, in nodes mode) among the replicas of the collector, and
// hands each key from reader to reader with the checkpoints and counts that
// make every flow counted once.
//
// Each replica holds a Lease of its own, labelled as a member of the leader
// Lease's group, and renews it every retry_period; it is the only writer of
// that Lease. Every replica watches the member Leases of its namespace, and a
// member is live while its renewTime plus its leaseDurationSeconds lies ahead.
// The owner of a key is the live member that rendezvous hashing picks, so
// every replica agrees on it without talking to the others. A member's
// checkpoints, released keys and (on the leader) counts hold for every key:
// past what one Lease should carry they go into checkpoint shards beside it
// (shards.go). A Membership
// starts with the first OnMembersChanged, once Attach has given it the API
// client, and stops with Stop, deleting its Lease on the way out so that the
// others take its share at once.
//
// The package sees nothing of the collector's components: the enforcer
// extension hosts it, passes in the leader Lease's settings (Config), the
// pods it caches (PodLookup), the leader Lease's holder (SetLeader) and where
// to record the number of live members (MembersGauge).
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Config is what a Membership needs of the leader Lease and of this replica.
type Config struct {
	// Namespace holds the Leases: the leader Lease's namespace.
	Namespace string
	// LeaseName is the leader Lease's name: the member Leases are named
	// after it (<lease_name>-member-<replica>) and labelled as its group.
	LeaseName string
	// Replica is this replica's pod name; Identity its holder identity in
	// the Leases, new with each start of its process.
	Replica, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are the leader Lease's:
	// a member renews every RetryPeriod, each renewal bounded by
	// RenewDeadline, and is live for LeaseDuration after its last renewal.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// PodLookup returns the UID of the pod namespace/name, or false when it is
// not known: a member Lease is owned by its replica's pod, so that it goes
// with the pod.
type PodLookup func(namespace, name string) (types.UID, bool)

// MembersGauge records the number of live members, this replica included.
type MembersGauge func(live int)

// Membership shares keys among the replicas; see the package comment.
type Membership struct {
	logger *zap.Logger
	cfg    Config
	// leaseName is this replica's Lease; group is the member-of label's value.
	leaseName, group string
	// gauge records the number of live members; nil records nothing.
	gauge MembersGauge

	mu sync.Mutex
	// cs, pod and parent are the host's, set by Attach.
	cs     kubernetes.Interface
	pod    PodLookup
	parent context.Context
	fns    []func()
	// started and stopped say where the membership is in its life.
	started, stopped bool
	informer         toolscache.SharedIndexInformer
	factory          informers.SharedInformerFactory
	cancel           context.CancelFunc
	done             chan struct{}
	// live are the identities of the live members, sorted.
	live []string
	// leader is the leader Lease's holder as this replica's elector last saw
	// it; readers are the live members that keys are shared among: every
	// live member but the leader, while another is live. The leader holds
	// in memory what the readers send it until it writes it, and the readers
	// send that again to the next leader; what it read itself would be lost
	// with it, or read again and its violations reported twice.
	leader  string
	readers []string
	// renewed is when this replica last wrote its Lease; zero before.
	renewed time.Time
	// joined is when this replica first wrote its Lease, by its clock.
	joined time.Time
	// published are the checkpoints as the last write of the Lease held
	// them: a claim is published once it is here.
	published map[string]time.Time
	// urgent says that the next renewal writes the shards: a claim, a
	// release, a forgotten key or a new count changed them. Checkpoints that
	// only advanced wait until shardsWritten is a lease duration old: the
	// next owner of a killed reader's key counts from the leader's counts,
	// so a live reader's progress need not be published at every renewal.
	urgent bool
	// shardsWritten is when a renewal last wrote the shards; shardCount is
	// how many it wrote.
	shardsWritten time.Time
	shardCount    int
	// countsChanged says that the leader took records past what its shards
	// publish (countsDueLocked says when they go).
	countsChanged bool
	// unpublished says that counts came while no receiver reads keys here:
	// warned once. created is when New made the membership.
	unpublished bool
	created     time.Time
	// writtenMarks give, on the leader, how far each of its writers wrote
	// each sender's batches (PublishWritten), by writer.
	writtenMarks WrittenWriters
	// checkpoints are this replica's own, by key.
	checkpoints map[string]time.Time
	// released are the keys this replica no longer reads, with the
	// checkpoint they had then: published beside the checkpoints, they tell
	// the next owner that it may resume at once.
	released map[string]time.Time
	// renewNow asks the renewing goroutine for a renewal before its period:
	// a key released is published at once.
	renewNow chan struct{}
	// gone are the checkpoints of member Leases that were deleted while this
	// replica watched: a member that stops gracefully deletes its Lease, and
	// the next owner of its keys resumes from what it published.
	gone map[string]time.Time
	// goneReleased are the keys of gone that their Lease listed as released:
	// a member that stops gracefully releases every key before it deletes its
	// Lease, one deleted after a kill (its pod's removal) did not.
	goneReleased map[string]bool
	// counted is, while this replica leads and members send it what they
	// learned, the newest flow time of each key up to which it took every
	// record: its Lease publishes it, and the next owner of a key whose reader
	// was killed counts from there. countedGone keeps what deleted Leases said.
	counted, countedGone map[string]time.Time
	// parsed caches each member Lease's checkpoints by its resourceVersion.
	parsed map[string]parsedCheckpoints
	// seen is, by Lease name, each member's renewal as this replica last saw
	// it change, by this replica's clock.
	seen map[string]sighting

	// shards are the checkpoint shards of the group's members (not this
	// replica's) as the watch delivered them, by name, kept in the order of
	// the watch's events: a membership Lease's deletion keeps what its
	// shards said then.
	shards map[string]*coordinationv1.Lease

	// own is this replica's Lease as last written, and ownShards its
	// checkpoint shards from 1 on; only the renewing goroutine and stop,
	// after it has ended, touch them.
	own       *coordinationv1.Lease
	ownShards map[int]*coordinationv1.Lease
}

type parsedCheckpoints struct {
	resourceVersion string
	times           map[string]time.Time
	released        map[string]bool
	counted         map[string]time.Time
}

// New returns the membership of the replica that cfg names; logger may be
// nil, and so may gauge.
func New(logger *zap.Logger, cfg Config, gauge MembersGauge) *Membership {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Membership{
		logger: logger, cfg: cfg, gauge: gauge, created: time.Now(),
		leaseName:   memberLeaseName(cfg.LeaseName, cfg.Replica),
		group:       shortName(cfg.LeaseName),
		checkpoints: map[string]time.Time{}, released: map[string]time.Time{}, renewNow: make(chan struct{}, 1),
		gone: map[string]time.Time{}, goneReleased: map[string]bool{},
		counted: map[string]time.Time{}, countedGone: map[string]time.Time{}, parsed: map[string]parsedCheckpoints{}, seen: map[string]sighting{},
		shards: map[string]*coordinationv1.Lease{}, ownShards: map[int]*coordinationv1.Lease{},
	}
}

// Attach gives the membership the API client and the host's pods, and the
// context that ends when the host stops; a membership asked for before
// starts now.
func (m *Membership) Attach(ctx context.Context, cs kubernetes.Interface, pod PodLookup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cs, m.pod, m.parent = cs, pod, ctx
	if len(m.fns) > 0 {
		m.startLocked()
	}
}

// OnMembersChanged registers fn and starts the membership, once.
func (m *Membership) OnMembersChanged(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fns = append(m.fns, fn)
	if m.cs != nil {
		m.startLocked()
	}
}

// startLocked starts the informer of the member Leases, the renewal of this
// replica's own and the timer that expires members, unless started already.
func (m *Membership) startLocked() {
	if m.started || m.stopped {
		return
	}
	m.started = true
	ctx, cancel := context.WithCancel(m.parent)
	m.cancel, m.done = cancel, make(chan struct{})
	m.factory = informers.NewSharedInformerFactoryWithOptions(m.cs, 0, informers.WithNamespace(m.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{v1alpha1.MemberOfLabel: m.group}).String()
		}))
	m.informer = m.factory.Coordination().V1().Leases().Informer()
	_, err := m.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			m.noteShard(obj)
			m.evaluate()
		},
		UpdateFunc: func(_, obj any) {
			m.noteShard(obj)
			m.evaluate()
		},
		DeleteFunc: m.deleted,
	})
	if err != nil {
		m.logger.Error("Cannot watch the member Leases: this replica reads no keys", zap.Error(err))
	}
	m.factory.Start(ctx.Done())
	m.logger.Info("Joining the members that share the flow sources' keys",
		zap.String("lease", m.leaseName), zap.String("namespace", m.cfg.Namespace), zap.String("identity", m.cfg.Identity))
	var wg sync.WaitGroup
	wg.Add(2)
	// Renewing and expiring run apart: a renewal that the API server holds
	// up (up to renew_deadline) does not delay the expiry of the others.
	go func() {
		defer wg.Done()
		every(ctx, m.cfg.RetryPeriod, m.renewNow, func() {
			m.renew(ctx)
			m.evaluate()
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, m.cfg.RetryPeriod, nil, m.evaluate)
	}()
	go func() {
		wg.Wait()
		m.factory.Shutdown()
		close(m.done)
	}()
}

// every calls fn at once and then every period, and whenever now receives,
// until ctx ends.
func every(ctx context.Context, period time.Duration, now <-chan struct{}, fn func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-now:
		}
	}
}

// Stop ends the membership; graceful deletes this replica's Lease, so that
// the others take its keys at once, and otherwise the Lease expires.
func (m *Membership) Stop(ctx context.Context, graceful bool) {
	m.mu.Lock()
	if !m.started || m.stopped {
		m.stopped = true
		m.mu.Unlock()
		return
	}
	m.stopped = true
	m.cancel()
	done := m.done
	m.live = nil
	m.mu.Unlock()
	<-done
	m.mu.Lock()
	wrote := !m.joined.IsZero()
	m.mu.Unlock()
	// A replica that never wrote its Lease has none to delete. One whose last
	// renewal conflicted has forgotten it (own is nil) but still leaves: the
	// renewal below reads it again.
	if !graceful || !wrote {
		return
	}
	// The last checkpoints first, every key released: the others keep what a
	// deleted Lease last said, and the next owners resume from there at once.
	m.mu.Lock()
	for k, t := range m.checkpoints {
		m.released[k] = t
	}
	m.urgent = true
	m.mu.Unlock()
	// A renewal cut short by the stop may have been written all the same:
	// then this one conflicts, forgets the Lease as written, and the next
	// reads it again and writes. If that fails too, the Lease is deleted as
	// it is, and the others keep what it said before.
	own := m.own
	m.renew(ctx)
	if m.own == nil {
		m.renew(ctx)
	}
	if m.own != nil {
		own = m.own
	}
	if own == nil {
		m.logger.Warn("Could not read the membership Lease to delete it: the others take this replica's keys when it expires",
			zap.String("lease", m.leaseName))
		return
	}
	err := m.cs.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, own.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &own.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		m.logger.Warn("Could not delete the membership Lease: the others take this replica's keys when it expires",
			zap.String("lease", own.Name), zap.Error(err))
		return
	}
	// Its shards after it: the others kept what they said when the Lease
	// went, and a later run of this pod starts with none.
	m.deleteStaleShards(ctx, 0)
	m.logger.Info("Left the members: deleted the membership Lease", zap.String("lease", own.Name))
}

// renew writes this replica's Lease: holder, duration, renew time, the
// checkpoints and the owner reference to its pod.
func (m *Membership) renew(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RenewDeadline)
	defer cancel()
	leases := m.cs.CoordinationV1().Leases(m.cfg.Namespace)
	if m.own == nil {
		l, err := leases.Get(ctx, m.leaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.leaseName, Namespace: m.cfg.Namespace}}
		case err != nil:
			m.logger.Warn("Cannot read the membership Lease", zap.String("lease", m.leaseName), zap.Error(err))
			return
		default:
			// An earlier run of this pod's collector left it: what it
			// published stays published.
			m.keepEarlier(parseCheckpoints(l.Annotations[v1alpha1.CheckpointsAnnotation]))
			m.loadEarlierShards(ctx, l)
		}
		m.own = l
	}
	now := time.Now()
	l := m.own.DeepCopy()
	m.mu.Lock()
	l.Spec = m.specLocked(l.Spec, now)
	publish := m.urgent || m.shardsWritten.IsZero() || now.Sub(m.shardsWritten) >= m.cfg.LeaseDuration ||
		(m.countsChanged && m.countsDueLocked(now))
	var shards []shard
	var snapshot map[string]time.Time
	if publish {
		shards = splitShards(m.checkpoints, m.released, m.counted)
		snapshot = maps.Clone(m.checkpoints)
		m.urgent, m.countsChanged = false, false
	}
	n := max(m.shardCount, 1)
	pod := m.pod
	marks := m.writtenMarksLocked()
	m.mu.Unlock()
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[v1alpha1.MemberOfLabel] = m.group
	if uid, ok := pod(m.cfg.Namespace, m.cfg.Replica); ok && uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: m.cfg.Replica, UID: uid, Controller: ptr.To(false)}}
	}
	// The shards first: the watchers that see this renewal have seen them.
	// The Lease itself holds none, so that a renewal that publishes nothing
	// new writes a few hundred bytes.
	var failed map[int]bool
	if publish {
		failed = m.writeShards(ctx, shards, l.OwnerReferences)
		n = len(shards)
	}
	setShard(l, shard{})
	count := ""
	if n > 1 {
		count = strconv.Itoa(n)
	}
	setAnnotation(l, v1alpha1.ShardsAnnotation, count)
	published := ""
	if marks != nil {
		published = formatWritten(marks())
	}
	setAnnotation(l, v1alpha1.WrittenThroughAnnotation, published)
	written, err := writeLease(ctx, leases, l)
	if publish && (err != nil || len(failed) > 0) {
		m.mu.Lock()
		m.urgent = true // written again at the next renewal
		m.mu.Unlock()
	}
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			m.own = nil // read it again at the next renewal
		}
		if !errors.Is(ctx.Err(), context.Canceled) { // not on the way out
			m.logger.Warn("Cannot renew the membership Lease", zap.String("lease", m.leaseName), zap.Error(err))
		}
		return
	}
	m.own = written
	m.mu.Lock()
	m.renewed = now
	if m.joined.IsZero() {
		m.joined = now
	}
	if publish {
		m.published = publishedWithout(snapshot, n, failed)
		m.shardsWritten, m.shardCount = now, n
	}
	m.mu.Unlock()
	if publish {
		m.deleteStaleShards(ctx, n)
	}
}

// setAnnotation sets the annotation key of l to v, making the map if need be,
// and removes it for "".
func setAnnotation(l *coordinationv1.Lease, key, v string) {
	if v == "" {
		delete(l.Annotations, key)
		return
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[key] = v
}

// specLocked is the Lease's spec for a renewal at now.
func (m *Membership) specLocked(s coordinationv1.LeaseSpec, now time.Time) coordinationv1.LeaseSpec {
	if s.HolderIdentity == nil || *s.HolderIdentity != m.cfg.Identity || s.AcquireTime == nil {
		s.HolderIdentity = ptr.To(m.cfg.Identity)
		s.AcquireTime = &metav1.MicroTime{Time: now}
	}
	s.LeaseDurationSeconds = ptr.To(int32((m.cfg.LeaseDuration + time.Second - 1) / time.Second))
	s.RenewTime = &metav1.MicroTime{Time: now}
	return s
}

// evaluate finds the live members; when they changed, it calls the
// registered functions.
func (m *Membership) evaluate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped || m.informer == nil || !m.informer.HasSynced() {
		return
	}
	now := time.Now()
	set := map[string]bool{}
	for _, obj := range m.informer.GetStore().List() {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			if id, live := m.liveLocked(l, now); live {
				set[id] = true
			}
		}
	}
	// This replica counts from the moment its Lease is written, whether or
	// not the watch has shown it yet.
	if !m.renewed.IsZero() && m.renewed.Add(m.cfg.LeaseDuration).After(now) {
		set[m.cfg.Identity] = true
	}
	live := make([]string, 0, len(set))
	for id := range set {
		live = append(live, id)
	}
	slices.Sort(live)
	if slices.Equal(live, m.live) && m.live != nil {
		return
	}
	m.live = live
	if len(m.counted) > 0 {
		// A member left: how far the leader took its keys' records goes
		// at once, whatever went before.
		m.urgent = true
		m.renewSoon()
	}
	m.logger.Info("The members that share the flow sources' keys changed",
		zap.Int("members", len(live)), zap.Bool("self", set[m.cfg.Identity]))
	if m.gauge != nil {
		m.gauge(len(live))
	}
	m.shareLocked(true)
}

// SetLeader notes the leader Lease's new holder: the keys are shared anew
// when that changes who reads.
func (m *Membership) SetLeader(identity string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leader = identity
	if !m.stopped {
		m.shareLocked(false)
	}
}

// shareLocked finds the readers among the live members and, when they
// changed (or always, when the live members did), calls the registered
// functions; m.mu is held.
func (m *Membership) shareLocked(liveChanged bool) {
	readers := m.live
	if i, ok := slices.BinarySearch(m.live, m.leader); ok && len(m.live) > 1 {
		readers = slices.Delete(slices.Clone(m.live), i, i+1)
	}
	if !liveChanged && slices.Equal(readers, m.readers) {
		return
	}
	m.readers = readers
	for _, fn := range m.fns {
		go fn()
	}
}

// sighting is a member's renewal as this replica saw it: the holder and
// renew time that the Lease said, and when this replica first saw them.
type sighting struct {
	holder string
	renew  time.Time
	at     time.Time
	// changed is whether at is a change seen, not the Lease's first sight.
	changed bool
}

// liveLocked returns a member Lease's holder, and whether it is live at now
// by this replica's clock: the Lease's duration has not passed since this
// replica saw its holder or renew time change. As client-go's leader
// election does, it never compares the remote renew time with the local
// clock, so that skew between nodes can neither expire a member that renews
// nor keep one that stopped. A Lease seen for the first time counts as
// renewed then.
func (m *Membership) liveLocked(l *coordinationv1.Lease, now time.Time) (string, bool) {
	s := l.Spec
	if l.DeletionTimestamp != nil || s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return "", false
	}
	last, ok := m.seen[l.Name]
	if !ok || last.holder != *s.HolderIdentity || !last.renew.Equal(s.RenewTime.Time) {
		last = sighting{holder: *s.HolderIdentity, renew: s.RenewTime.Time, at: now, changed: ok}
		m.seen[l.Name] = last
	}
	expires := last.at.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
	return *s.HolderIdentity, expires.After(now)
}

// deleted keeps a deleted member Lease's checkpoints and evaluates again.
func (m *Membership) deleted(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok {
		m.mu.Lock()
		if _, _, isShard := shardIndex(l); isShard {
			// Its membership Lease's deletion, before it, kept what it said.
			delete(m.shards, l.Name)
		} else {
			for _, from := range append(m.shardsOfLocked(l), l) {
				m.keepGoneLocked(m.checkpointsOfLocked(from))
				delete(m.parsed, from.Name)
			}
			delete(m.seen, l.Name)
		}
		delete(m.parsed, l.Name)
		m.mu.Unlock()
	}
	m.evaluate()
}

// keepGoneLocked keeps what a deleted member published.
func (m *Membership) keepGoneLocked(p parsedCheckpoints) {
	for k, t := range p.times {
		if t.After(m.gone[k]) {
			m.gone[k] = t
			m.goneReleased[k] = p.released[k]
		}
	}
	for k, t := range p.counted {
		if t.After(m.countedGone[k]) {
			m.countedGone[k] = t
		}
	}
}

// Owns reports whether this replica is one of the readers (a live member,
// and not the leader while another is live) and the rendezvous owner of key
// among them.
func (m *Membership) Owns(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := slices.BinarySearch(m.readers, m.cfg.Identity); !ok {
		return false
	}
	return rendezvousOwner(m.readers, key) == m.cfg.Identity
}

// Checkpoint keeps the newest t of key, which the next renewal publishes. A
// key read again after its release is no longer released. The first
// checkpoint of a key, or the first after its release, is published at once:
// it tells a replica that takes the key over that this one read it.
func (m *Membership) Checkpoint(key string, t time.Time) {
	m.mu.Lock()
	prev, known := m.checkpoints[key]
	if t.After(prev) {
		m.checkpoints[key] = t
	}
	r, released := m.released[key]
	if released && t.After(r) {
		delete(m.released, key)
	}
	now := !known || (released && t.After(r))
	m.urgent = m.urgent || now
	m.mu.Unlock()
	if now {
		m.renewSoon()
	}
}

// settlePoll is how often Take asks whether the previous reader's
// checkpoint is final.
const settlePoll = 50 * time.Millisecond

// Take makes this replica key's reader, before its first stream: it waits
// until the checkpoint that another replica published for key is final (that
// replica released the key, or left), then claims the key where every flow is
// counted (the previous reader's checkpoint or, for one that was killed, how
// far the leader took its records; else start), so that what the previous
// reader sent since its last renewal is not counted again. A previous reader
// that neither releases nor renews is gone within a lease, which bounds the
// wait. It returns once the claim is written, or with ctx's error when ctx
// ends first.
func (m *Membership) Take(ctx context.Context, key string, start time.Time) (time.Time, bool, error) {
	if !m.Settled(key) {
		m.logger.Info("Waiting for the hand-off of a key from its previous reader", zap.String("key", key))
		tick := time.NewTicker(settlePoll)
		defer tick.Stop()
		for !m.Settled(key) {
			select {
			case <-ctx.Done():
				return time.Time{}, false, ctx.Err()
			case <-tick.C:
			}
		}
	}
	from, ok := m.CountFrom(key)
	if ok {
		start = from
	}
	// Written before the first stream: a replica that takes the key over
	// from this one, or joins meanwhile, finds the claim and waits for its
	// release rather than reading the source's buffer again.
	if err := m.Claim(ctx, key, start); err != nil {
		return time.Time{}, false, err
	}
	return from, ok, nil
}

// claimPoll is how often Claim looks whether its checkpoint is written.
const claimPoll = 20 * time.Millisecond

// Claim checkpoints key at t and returns once a write of this replica's Lease
// holds it, or when ctx ends. A reader claims a node this way before its first
// stream: a replica that joins meanwhile then finds the claim and waits for
// its release, rather than reading the node's buffer a second time.
func (m *Membership) Claim(ctx context.Context, key string, t time.Time) error {
	m.Checkpoint(key, t)
	m.mu.Lock()
	m.urgent = true
	m.mu.Unlock()
	m.renewSoon()
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		m.mu.Lock()
		p, ok := m.published[key]
		m.mu.Unlock()
		if ok && !p.Before(t) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// renewSoon asks for a renewal before the period ends.
func (m *Membership) renewSoon() {
	select {
	case m.renewNow <- struct{}{}:
	default: // a renewal is asked for already
	}
}

// Forget drops this replica's checkpoint of key, and what it kept of
// deleted members' checkpoints of key: the key's source is gone. The next
// renewal publishes the checkpoints without it.
func (m *Membership) Forget(key string) {
	m.mu.Lock()
	_, had := m.checkpoints[key]
	delete(m.checkpoints, key)
	delete(m.released, key)
	delete(m.gone, key)
	delete(m.goneReleased, key)
	_, counted := m.counted[key]
	delete(m.counted, key)
	delete(m.countedGone, key)
	m.urgent = m.urgent || had || counted
	m.mu.Unlock()
	if had || counted {
		m.renewSoon()
	}
}

// Counted records, on the leader, that it took every record of key's flows
// up to t from the member that reads key; the next renewal publishes it. The
// counts of deleted nodes go with Forget, which bounds them by the cluster.
func (m *Membership) Counted(key string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.After(m.counted[key]) {
		m.counted[key] = t
		m.countsChanged = true
	}
	// Not in the first lease duration: the collector starts its receivers
	// one by one, and a restarted leader may take records before its hubble
	// receiver registers.
	if len(m.fns) == 0 && !m.unpublished && time.Since(m.created) >= m.cfg.LeaseDuration {
		// Only a member publishes, and only a replica that reads keys is
		// one: the counts stay here, and the next reader of a killed
		// reader's key counts from that reader's own checkpoint.
		m.unpublished = true
		m.logger.Warn("This replica takes the readers' records, but reads no nodes itself, so it is not a member and cannot publish how far it took them: "+
			"after a reader is killed, its nodes are counted from its own checkpoint, which can count flows twice. "+
			"Run the leader receiver in the same collector as the hubble receiver in nodes mode, every replica configured alike.",
			zap.String("key", key))
	}
}

// countsDueLocked reports whether the leader's counts, when they changed, go
// with the next renewal. They are needed when a reader is killed: the next
// owner of its keys takes them a lease duration after its last renewal and
// counts from what the leader published by then. So they go at every renewal
// while another member's renewal is overdue (two retry periods since this
// replica saw it), which a killed reader's is within two retry periods of
// its death, and otherwise only with the shards' refresh, a lease duration
// apart: renewals come every retry period, and at 5,000 nodes each would
// write some 390 KB of counts. A lease shorter than six retry periods leaves
// too little room after the overdue renewal: then they go at every renewal.
func (m *Membership) countsDueLocked(now time.Time) bool {
	if m.cfg.LeaseDuration < 6*m.cfg.RetryPeriod || m.informer == nil {
		return true
	}
	for _, obj := range m.informer.GetStore().List() {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Name == m.leaseName {
			continue
		}
		if _, _, isShard := shardIndex(l); isShard {
			continue
		}
		if _, live := m.liveLocked(l, now); live && now.Sub(m.seen[l.Name].at) > 2*m.cfg.RetryPeriod {
			return true
		}
	}
	return false
}

// CountFrom returns the time up to which every flow of key is counted, for
// the key's new owner: the newest checkpoint when its writer hands on
// everything up to it (it released key, left gracefully, or is this replica);
// else, for a writer that was killed and published its checkpoint up to a
// retry period late, the newest time up to which a leader took key's records,
// when one published it. A leader publishes within a retry period of taking
// them, and the writer's Lease expires a lease duration after its last
// renewal, so what the killed reader sent is published by then.
func (m *Membership) CountFrom(key string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	newest, from, ok := m.newestLocked(key)
	if !ok {
		return time.Time{}, false
	}
	var delivered bool
	switch own, mine := m.checkpoints[key]; {
	case from != nil:
		delivered = m.checkpointsOfLocked(from).released[key]
	case mine && own.Equal(newest):
		delivered = true
	default: // a deleted Lease's
		delivered = m.goneReleased[key]
	}
	if delivered {
		return newest, true
	}
	// The newest time up to which any leader, this replica among them,
	// published that it took key's records.
	if t, _, ok := m.newestOfLocked(key, m.counted, m.countedGone, false, false, countsOf, nil); ok {
		return t, true
	}
	return newest, true
}

// Release marks key released at its checkpoint and renews at once. A key
// this replica never checkpointed (its source could not be read) has nothing
// to hand off: the next owner finds no checkpoint of this replica's and
// starts as for a key nobody read.
func (m *Membership) Release(key string) {
	m.mu.Lock()
	t, ok := m.checkpoints[key]
	if ok {
		m.released[key] = t
		m.urgent = true
	}
	m.mu.Unlock()
	if ok {
		m.renewSoon()
	}
}

// CheckpointOf returns the newest time of key among this replica's own
// checkpoints and those that every member Lease in the cache publishes, live
// or expired, or published before it was deleted.
func (m *Membership) CheckpointOf(key string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, _, ok := m.newestLocked(key)
	return t, ok
}

// Settled reports whether the newest checkpoint of key is final: this
// replica's own, a deleted Lease's, or published by a member that released
// key or whose Lease has expired; true when there is none.
func (m *Membership) Settled(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	newest, from, ok := m.newestLocked(key)
	if own, mine := m.checkpoints[key]; mine && from == nil && own.Equal(newest) {
		return true // this replica's own
	}
	if !ok || from == nil {
		return m.othersCaughtUpLocked()
	}
	member, current := m.memberOfLocked(from)
	if !current {
		return true
	}
	if _, live := m.liveLocked(member, time.Now()); !live {
		return true
	}
	return m.checkpointsOfLocked(from).released[key]
}

// othersCaughtUpLocked reports whether every other live member's Lease has
// changed since this replica joined. Until then one of them may hold a claim
// that it has not published yet (it claimed a key before it saw this replica
// join, and its write is on its way): a key that no other member published is
// not settled before. Each member renews within a retry period, and a claim
// asks for a renewal at once, so the wait is short.
func (m *Membership) othersCaughtUpLocked() bool {
	if m.informer == nil {
		return true
	}
	if m.joined.IsZero() {
		return false
	}
	now := time.Now()
	for _, obj := range m.informer.GetStore().List() {
		l, isLease := obj.(*coordinationv1.Lease)
		if !isLease || l.Name == m.leaseName {
			continue
		}
		// A first sight says nothing of when the member last wrote: only a
		// change seen after the join does.
		if _, live := m.liveLocked(l, now); live {
			if last := m.seen[l.Name]; !last.changed || !last.at.After(m.joined) {
				return false
			}
		}
	}
	return true
}

// newestLocked returns the newest checkpoint of key and the member Lease
// that published it; nil for this replica's own or a deleted Lease's.
//
// A claim at the time of a release is newer than the release: the claiming
// member counts from there and reads key until it releases key in turn. A
// key that moves twice within one publication period has both at one time
// (the second member claims at the first one's released checkpoint and has
// not published a later one yet); the release must not settle it while the
// claim's member still reads it.
func (m *Membership) newestLocked(key string) (time.Time, *coordinationv1.Lease, bool) {
	_, ownReleased := m.released[key]
	return m.newestOfLocked(key, m.checkpoints, m.gone, ownReleased, m.goneReleased[key], checkpointsOf,
		func(p parsedCheckpoints) bool { return p.released[key] })
}

// checkpointsOf and countsOf pick one kind of time out of what a member Lease
// publishes.
func checkpointsOf(p parsedCheckpoints) map[string]time.Time { return p.times }
func countsOf(p parsedCheckpoints) map[string]time.Time      { return p.counted }

// newestOfLocked returns the newest time of key among this replica's own
// times, those kept of deleted Leases, and those that of picks out of every
// other member Lease in the cache, with the Lease that published it (nil for
// this replica's own or a deleted Lease's). Of times that are equal, one that
// is not released (ownReleased, goneReleased, released) wins over one that
// is; released may be nil when no time is ever released.
func (m *Membership) newestOfLocked(key string, own, gone map[string]time.Time, ownReleased, goneReleased bool,
	of func(parsedCheckpoints) map[string]time.Time, released func(parsedCheckpoints) bool) (time.Time, *coordinationv1.Lease, bool) {
	best, ok := own[key]
	bestReleased := ok && ownReleased
	var from *coordinationv1.Lease
	newer := func(t time.Time, isReleased bool) bool {
		return !ok || t.After(best) || (t.Equal(best) && bestReleased && !isReleased)
	}
	if t, found := gone[key]; found && newer(t, goneReleased) {
		best, ok, bestReleased = t, true, goneReleased
	}
	if m.informer == nil {
		return best, nil, ok
	}
	for _, obj := range m.informer.GetStore().List() {
		l, isLease := obj.(*coordinationv1.Lease)
		if !isLease {
			continue
		}
		// This replica's own, and a shard that its membership Lease does
		// not name, say nothing here.
		member, current := m.memberOfLocked(l)
		if !current || (member.Spec.HolderIdentity != nil && *member.Spec.HolderIdentity == m.cfg.Identity) {
			continue
		}
		p := m.checkpointsOfLocked(l)
		t, found := of(p)[key]
		if !found {
			continue
		}
		isReleased := released != nil && released(p)
		if newer(t, isReleased) {
			best, from, ok, bestReleased = t, l, true, isReleased
		}
	}
	return best, from, ok
}

// checkpointsOfLocked returns the checkpoints and released keys that member
// Lease l publishes, parsed once for each of its versions.
func (m *Membership) checkpointsOfLocked(l *coordinationv1.Lease) parsedCheckpoints {
	if p, ok := m.parsed[l.Name]; ok && p.resourceVersion == l.ResourceVersion {
		return p
	}
	p := parsedCheckpoints{resourceVersion: l.ResourceVersion,
		times:    parseCheckpoints(l.Annotations[v1alpha1.CheckpointsAnnotation]),
		released: parseReleased(l.Annotations[v1alpha1.ReleasedAnnotation]),
		counted:  parseCheckpoints(l.Annotations[v1alpha1.CountedAnnotation])}
	m.parsed[l.Name] = p
	return p
}

// Members returns the identities of the live members, sorted.
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.live)
}

// formatCheckpoints is the checkpoints annotation's value, "" for none: JSON
// with sorted keys, so that the same checkpoints make the same value.
func formatCheckpoints(c map[string]time.Time) string {
	if len(c) == 0 {
		return ""
	}
	out := make(map[string]string, len(c))
	for k, t := range c {
		out[k] = t.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// parseCheckpoints reads the checkpoints annotation; what cannot be read is
// left out.
func parseCheckpoints(v string) map[string]time.Time {
	if v == "" {
		return nil
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil
	}
	out := make(map[string]time.Time, len(raw))
	for k, s := range raw {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			out[k] = t
		}
	}
	return out
}

// formatReleased is the released annotation's value, "" for none: the keys
// still released at the checkpoint they had, as a sorted JSON list.
func formatReleased(r map[string]time.Time) string {
	if len(r) == 0 {
		return ""
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b, _ := json.Marshal(keys)
	return string(b)
}

// parseReleased reads the released annotation; nil when it cannot be read.
func parseReleased(v string) map[string]bool {
	if v == "" {
		return nil
	}
	var keys []string
	if err := json.Unmarshal([]byte(v), &keys); err != nil {
		return nil
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}
