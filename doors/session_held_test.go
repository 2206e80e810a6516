package doors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
)

// burstSession is a session whose client sent a burst of messages
// together: Buffered reports the next one here until the last is taken.
// Before it hands out each message after the first, it waits a while for
// a batch to be written, so that a door that wrote the replies of a burst
// one by one would show it in batches. Every batch sent is recorded.
type burstSession struct {
	in     [][]byte
	taken  int
	mu     sync.Mutex
	sent   chan struct{} // a batch was written
	sizes  []int
	closed chan struct{}
	once   sync.Once
}

func (s *burstSession) ID() string { return "burst" }

func (s *burstSession) Buffered() bool { return s.taken < len(s.in) }

func (s *burstSession) Recv(ctx context.Context) (core.Message, error) {
	if s.taken == len(s.in) {
		select {
		case <-s.closed:
			return core.Message{}, &core.CloseError{Code: core.CloseNormal}
		case <-ctx.Done():
			return core.Message{}, ctx.Err()
		}
	}
	if s.taken > 0 {
		select {
		case <-s.sent:
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.taken++
	return core.Message{Data: s.in[s.taken-1]}, nil
}

func (s *burstSession) Send(ctx context.Context, m core.Message) error {
	return s.SendBatch(ctx, []core.Message{m})
}

func (s *burstSession) SendBatch(_ context.Context, ms []core.Message) error {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(ms))
	s.mu.Unlock()
	select {
	case s.sent <- struct{}{}:
	default:
	}
	return nil
}

func (s *burstSession) Close(int, string) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *burstSession) batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.sizes...)
}

// TestSessionBurstOneWrite: the replies to messages a client sent
// together (the transport has the next one already) are written in one
// batch once the last of them was worked on, not one write each.
func TestSessionBurstOneWrite(t *testing.T) {
	tr, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const burst = 4
	s := &burstSession{sent: make(chan struct{}, 1), closed: make(chan struct{})}
	for i := range burst {
		s.in = append(s.in, fmt.Appendf(nil, `{"method":"PUT","resource":"/burst/%d","msg_id":%d}`, i, i))
	}
	h := &doors.Session{Tree: channelhost.TreeOf(tr)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeSession(context.Background(), &core.Request{}, s)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.batches()
		n := 0
		for _, k := range got {
			n += k
		}
		if n >= burst {
			if len(got) != 1 {
				t.Errorf("the %d replies were written in batches of %v, want one", burst, got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replies written (batches %v)", n, burst, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close(core.CloseNormal, "")
	<-done
}
