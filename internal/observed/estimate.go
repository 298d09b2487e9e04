package observed

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/axiomhq/hyperloglog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// precision is the sketches': 2^10 registers, so that one sketch holds at
// most 1 KiB of registers once dense, and the seven classes' two sketches of
// one object stay under 16 KiB.
const precision = 10

// StandardError is the relative standard error of an estimated count,
// 1.04/sqrt(2^precision).
const StandardError = 0.0325

// estimators count one object's distinct edges by peer class, tracked one by
// one or not, so that the counts stay true past the tracking limit and carry
// over to the next writer through the status.
type estimators struct {
	classes map[v1alpha1.PeerClass]*classEstimators
	// limitReached is set once an edge did not fit in the tracking.
	limitReached bool
	// buf is the encoding of the key being inserted, reused.
	buf []byte
}

// classEstimators are one peer class's sketches.
type classEstimators struct {
	// seen holds every distinct edge of the class that was seen.
	seen *hyperloglog.Sketch
	// blocked holds the edges of the class that protect would block as they
	// were judged when seen untracked, or, read from a status, as an earlier
	// writer judged them; tracked edges are judged again at every write.
	blocked *hyperloglog.Sketch
}

func newSketch() *hyperloglog.Sketch {
	sk, err := hyperloglog.NewSketch(precision, true)
	if err != nil {
		panic(err) // precision is a valid constant
	}
	return sk
}

// class is the estimators of c, new ones if there are none yet.
func (es *estimators) class(c v1alpha1.PeerClass) *classEstimators {
	if es.classes == nil {
		es.classes = map[v1alpha1.PeerClass]*classEstimators{}
	}
	ce := es.classes[c]
	if ce == nil {
		ce = &classEstimators{seen: newSketch(), blocked: newSketch()}
		es.classes[c] = ce
	}
	return ce
}

// see counts k as seen and, when blocked, as an edge not tracked that
// protect would block; the key is encoded once for both.
func (es *estimators) see(k *Key, blocked bool) {
	es.buf = k.appendTo(es.buf[:0])
	ce := es.class(k.Class)
	ce.seen.Insert(es.buf)
	if blocked {
		ce.blocked.Insert(es.buf)
	}
}

// appendTo appends an encoding of k that is the same in every process, so
// that an estimator read from a status counts an edge once.
func (k *Key) appendTo(b []byte) []byte {
	for _, s := range [...]string{string(k.Class), k.Namespace, k.Kind, k.Name, k.Principal, k.Address, k.DNSName, string(k.Protocol)} {
		b = append(b, s...)
		b = append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, uint32(k.Port))
}

// classCount is what the estimators and the tracked edges say of one class.
type classCount struct {
	// seen and blocked are the counts the status reports.
	seen, blocked int
	// trackedSeen and trackedBlocked are the tracked edges' exact counts.
	trackedSeen, trackedBlocked int
	// blockedKeys are the tracked edges that protect would block.
	blockedKeys []Key
}

// count fills in the estimated counts of c, the tracked edges of class
// class, and returns the status form of the class's estimators: the blocked
// sketch then holds the tracked edges that protect would block too, so that
// the next writer knows their verdict until it tracks them again.
func (es *estimators) count(class v1alpha1.PeerClass, c *classCount) v1alpha1.ClassEstimators {
	ce := es.class(class)
	blocked := ce.blocked.Clone()
	for i := range c.blockedKeys {
		es.buf = c.blockedKeys[i].appendTo(es.buf[:0])
		blocked.Insert(es.buf)
	}
	// An estimate is at least the exact count that it includes.
	c.seen = max(c.trackedSeen, int(ce.seen.Estimate()))
	c.blocked = min(c.seen, max(c.trackedBlocked, int(blocked.Estimate())))
	return v1alpha1.ClassEstimators{Class: class, Seen: marshal(ce.seen), WouldBlock: marshal(blocked)}
}

// marshal encodes a sketch whose Estimate drained its temporary set, so that
// the same sketch encodes the same way and an unchanged status is not
// written again.
func marshal(sk *hyperloglog.Sketch) []byte {
	sk.Estimate()
	b, err := sk.MarshalBinary()
	if err != nil {
		panic(err) // a sketch made by newSketch has a valid precision
	}
	return b
}

// restore merges the estimators of a status, an earlier writer's, into es.
func (es *estimators) restore(st *v1alpha1.EdgeEstimators) error {
	es.limitReached = es.limitReached || st.TrackingLimitReached
	for i := range st.Classes {
		c := &st.Classes[i]
		seen, err := unmarshal(c.Seen)
		if err != nil {
			return fmt.Errorf("the %s estimator of seen edges: %w", c.Class, err)
		}
		blocked, err := unmarshal(c.WouldBlock)
		if err != nil {
			return fmt.Errorf("the %s estimator of would-block edges: %w", c.Class, err)
		}
		ce := es.class(c.Class)
		if err := ce.seen.Merge(seen); err != nil {
			return fmt.Errorf("the %s estimator of seen edges: %w", c.Class, err)
		}
		if err := ce.blocked.Merge(blocked); err != nil {
			return fmt.Errorf("the %s estimator of would-block edges: %w", c.Class, err)
		}
	}
	return nil
}

// unmarshal decodes a sketch of a status: empty is an empty sketch, and a
// sketch of another precision is refused, as it would change the error.
func unmarshal(b []byte) (*hyperloglog.Sketch, error) {
	sk := newSketch()
	if len(b) == 0 {
		return sk, nil
	}
	var got hyperloglog.Sketch
	if err := got.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if len(b) > 1 && b[1] != precision {
		return nil, fmt.Errorf("precision %d, want %d", b[1], precision)
	}
	if err := sk.Merge(&got); err != nil {
		return nil, err
	}
	return sk, nil
}

// classesOf is the classes of es and of counts, in the order of classOrder.
func (es *estimators) classesOf(counts map[v1alpha1.PeerClass]*classCount) []v1alpha1.PeerClass {
	var out []v1alpha1.PeerClass
	for _, c := range classOrder {
		if _, ok := es.classes[c]; ok {
			out = append(out, c)
		} else if _, ok := counts[c]; ok {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}
