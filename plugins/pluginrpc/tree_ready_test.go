package pluginrpc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
)

// endedReadier is a tree client that has frames queued and has ended
// already, as the tree leaves a slow consumer: one wake (at OnReady), then
// TryNext gives the frames before the end.
type endedReadier struct {
	mu     sync.Mutex
	frames []plugins.TreeFrame
	gone   error
}

func (r *endedReadier) TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf = buf[:0]
	if len(r.frames) > 0 {
		buf = append(buf, r.frames...)
		r.frames = nil
		return buf, nil
	}
	return buf, r.gone
}

func (r *endedReadier) OnReady(f func()) {
	if f != nil {
		f() // frames are queued and the client has ended: at once
	}
}

func (r *endedReadier) Err() error { return r.gone }

// stuckStream is the host's end of a TreeConnect call whose plugin reads
// nothing: every Send waits until the call ends.
type stuckStream struct {
	grpc.ServerStream
	ctx   context.Context
	sends chan *pluginv2.TreeFrames
}

func (s *stuckStream) Context() context.Context { return s.ctx }

func (s *stuckStream) Send(m *pluginv2.TreeFrames) error {
	s.sends <- m
	<-s.ctx.Done()
	return s.ctx.Err()
}

// TestSendReadyEndedPluginStuck: a TreeConnect call whose client the tree
// ended, and whose plugin reads nothing more, ends with the client's Gone
// in its status although the plugin never lets a Send finish: when the
// client ended before the host took its last frames (the wake of the end
// spent on that take), and when nothing was left to take but the end
// itself (its Gone message waits behind the frames sent before). Before,
// the call waited for that Send for ever, holding the client
// (TestTreeSlowPlugin's failure under load).
func TestSendReadyEndedPluginStuck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames int // queued when the call starts
	}{
		{"frames left", 2},
		{"nothing left", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &endedReadier{gone: &plugins.TreeGone{Code: 1008, Reason: "slow consumer"}}
			for i := range tc.frames {
				r.frames = append(r.frames, plugins.TreeFrame{Data: fmt.Appendf(nil, `{"n":%d}`, i)})
			}
			stream := &stuckStream{ctx: ctx, sends: make(chan *pluginv2.TreeFrames, 4)}
			done := make(chan error, 1)
			go func() { done <- sendReady(ctx, stream, r) }()
			select {
			case m := <-stream.sends:
				if len(m.GetFrames()) != tc.frames || (tc.frames == 0) != (m.GetGone() != nil) {
					t.Errorf("the first Send: %d frames, gone %v; want %d frames, or the Gone alone", len(m.GetFrames()), m.GetGone(), tc.frames)
				}
			case <-time.After(15 * time.Second): // a hang guard
				t.Fatal("nothing was ever sent")
			}
			select {
			case err := <-done:
				g := treeGoneOf(err)
				if g == nil || g.Code != 1008 || g.Reason != "slow consumer" {
					t.Errorf("the call ended with %v, want the client's Gone (1008 slow consumer) in an ABORTED status", err)
				}
			case <-time.After(15 * time.Second): // a hang guard (sendGrace is a second)
				t.Fatal("the call still waits for a Send of a client the tree ended")
			}
		})
	}
}
