package dataplanetest

import "sync"

// live fans flows pushed while streams are open out to those streams, so that a
// test or the demo can make the data plane see something new after it has
// replayed its history.
type live[M any] struct {
	mu   sync.Mutex
	subs map[chan M]struct{}
}

// subscribe returns a channel of what is pushed from now on, and its cancel.
func (l *live[M]) subscribe() (<-chan M, func()) {
	ch := make(chan M, 1024)
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[chan M]struct{}{}
	}
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs, ch)
		l.mu.Unlock()
	}
}

// push hands msgs to every open stream, in order.
func (l *live[M]) push(msgs ...M) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs {
		for _, m := range msgs {
			ch <- m
		}
	}
}

// follow sends what is pushed until done is closed or send fails.
func follow[M any](ch <-chan M, done <-chan struct{}, send func(M) error) error {
	for {
		select {
		case <-done:
			return nil
		case m := <-ch:
			if err := send(m); err != nil {
				return err
			}
		}
	}
}
