package ztunnelreceiver

// queueChunk is the number of access lines in one chunk of an accessQueue.
const queueChunk = 1024

// accessQueue holds the joiner's access lines in arrival order, which is the
// order they expire in, each at a sequence number. The lines are values in
// chunks of queueChunk: the garbage collector has one object to trace per
// chunk, not one per line, and the memory follows what is held, a burst's
// given back as its lines leave.
type accessQueue struct {
	chunks [][]heldAccess
	// spare is a chunk emptied, kept for the next one needed.
	spare []heldAccess
	// base is the sequence number of chunks[0][0]; head is the oldest line
	// held, tail the next line's. Sequence numbers start at 1: 0 is none.
	base, head, tail uint64
}

func (q *accessQueue) len() int { return int(q.tail - q.head) }

// push adds a and returns its sequence number.
func (q *accessQueue) push(a heldAccess) uint64 {
	if q.head == 0 {
		q.base, q.head, q.tail = 1, 1, 1
	}
	off := q.tail - q.base
	if off == uint64(len(q.chunks))*queueChunk {
		c := q.spare
		if c == nil {
			c = make([]heldAccess, queueChunk)
		}
		q.spare = nil
		q.chunks = append(q.chunks, c)
	}
	q.chunks[off/queueChunk][off%queueChunk] = a
	q.tail++
	return q.tail - 1
}

// at returns the line of sequence number seq, or nil when it has left.
func (q *accessQueue) at(seq uint64) *heldAccess {
	if seq < q.head || seq >= q.tail {
		return nil
	}
	off := seq - q.base
	return &q.chunks[off/queueChunk][off%queueChunk]
}

// front returns the oldest line, or nil when the queue is empty.
func (q *accessQueue) front() *heldAccess { return q.at(q.head) }

// pop removes the oldest line.
func (q *accessQueue) pop() {
	*q.front() = heldAccess{} // what it points to may go
	q.head++
	if q.head-q.base == queueChunk {
		q.spare = q.chunks[0]
		n := copy(q.chunks, q.chunks[1:])
		q.chunks[n] = nil
		q.chunks = q.chunks[:n]
		q.base += queueChunk
	}
}
