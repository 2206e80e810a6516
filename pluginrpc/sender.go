package pluginrpc

import (
	"context"
	"sync"
)

// sender sends the messages of one multiplexed call (Sessions, Trees) that
// the long-lived goroutine of a session or tree client would otherwise
// send itself. gRPC's send path (marshalling, framing) is deep: run once on
// a goroutine that then waits for the client for hours, it doubles that
// goroutine's stack for the session's whole life (8 KiB instead of 4, per
// idle connection). Its one goroutine per call takes the messages in
// order; a poster waits for its message to be sent, so nothing queues
// here beyond one message per waiting goroutine and the last message of a
// session or client (postAsync). Goroutines that live
// briefly (the writers of a session's messages, the readers of a call)
// send directly, under the same lock.
type sender[T any] struct {
	send func(T) error // the call's Send; called under smu
	smu  sync.Mutex    // serializes send

	mu     sync.Mutex
	queue  []posted[T]
	wake   chan struct{}
	broken error // once set, posts fail at once with it
}

// posted is a message waiting for the sender and where its result goes.
type posted[T any] struct {
	m    T
	done chan error
}

func newSender[T any](send func(T) error) *sender[T] {
	s := &sender[T]{send: send, wake: make(chan struct{}, 1)}
	go s.run()
	return s
}

// direct sends m from the calling goroutine.
func (s *sender[T]) direct(m T) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.send(m)
}

// post has the sender's goroutine send m and returns its result, or
// ctx's error when ctx ends first (m may still be sent). *done is the
// caller's channel for the result, made here when nil; it is reset to nil
// when ctx ended first, since the result still comes.
func (s *sender[T]) post(ctx context.Context, m T, done *chan error) error {
	s.mu.Lock()
	if err := s.broken; err != nil {
		s.mu.Unlock()
		return err
	}
	if *done == nil {
		*done = make(chan error, 1)
	}
	s.queue = append(s.queue, posted[T]{m: m, done: *done})
	s.mu.Unlock()
	wakeUp(s.wake)
	select {
	case err := <-*done:
		return err
	case <-ctx.Done():
		*done = nil
		return ctx.Err()
	}
}

// postAsync has the sender's goroutine send m after what was posted
// before, without waiting: for the last message of a session or client
// (its cancel or release), which must not overtake a message posted
// before, whose poster gave up waiting.
func (s *sender[T]) postAsync(m T) {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, posted[T]{m: m})
	s.mu.Unlock()
	wakeUp(s.wake)
}

// stop fails the posts waiting and those to come with err, and ends the
// sender's goroutine.
func (s *sender[T]) stop(err error) {
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
	}
	s.mu.Unlock()
	wakeUp(s.wake)
}

func (s *sender[T]) run() {
	for range s.wake {
		for {
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.queue = nil
				broken := s.broken
				s.mu.Unlock()
				if broken != nil {
					return
				}
				break
			}
			p := s.queue[0]
			s.queue[0] = posted[T]{}
			s.queue = s.queue[1:]
			broken := s.broken
			s.mu.Unlock()
			err := broken
			if err == nil {
				err = s.direct(p.m)
			}
			if p.done != nil {
				p.done <- err
			}
		}
	}
}
