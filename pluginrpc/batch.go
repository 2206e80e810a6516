package pluginrpc

import (
	"runtime"
	"sync"
)

// batcher sends what many goroutines queue on one stream in as few
// messages as it can, with no goroutine of its own: the goroutine that
// queues an item while no send is under way becomes the sender and sends
// everything queued, then whatever queued while it sent, until the queue
// is empty. One item alone costs its goroutine one send, as a call of its
// own would; under load a message carries all that queued during the
// previous one. The queue's backing arrays are reused, two in turn.
type batcher[T any] struct {
	// send sends items (one message or several, as it chooses); one call
	// at a time. The items are not kept after it returns.
	send func(items []T)
	// handoff runs f in a new goroutine, for the sender that hands the
	// rest of the queue on; nil means go f().
	handoff func(f func())

	mu      sync.Mutex
	queue   []T
	spare   []T
	sending bool
}

// maxSenderRounds bounds the messages a goroutine sends for others before
// it hands the rest to a new goroutine and goes back to its own request.
const maxSenderRounds = 8

// add queues v and, when no send is under way, sends the queue.
func (b *batcher[T]) add(v T) {
	b.mu.Lock()
	b.queue = append(b.queue, v)
	if b.sending {
		b.mu.Unlock()
		return
	}
	b.sending = true
	b.mu.Unlock()
	runtime.Gosched()
	b.flush(maxSenderRounds)
}

// flush sends the queue until it is empty, at most rounds times before it
// hands the rest to a new goroutine; b.sending is true on entry.
func (b *batcher[T]) flush(rounds int) {
	b.mu.Lock()
	for ; rounds > 0 && len(b.queue) > 0; rounds-- {
		items := b.queue
		b.queue = b.spare[:0]
		b.mu.Unlock()
		b.send(items)
		clear(items)
		b.mu.Lock()
		b.spare = items[:0]
	}
	if len(b.queue) > 0 {
		b.mu.Unlock()
		f := func() { b.flush(maxSenderRounds) }
		if b.handoff != nil {
			b.handoff(f)
		} else {
			go f()
		}
		return
	}
	b.sending = false
	b.mu.Unlock()
}
