package pluginrpc

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// endedClient is a tree client that has frames queued and has ended
// already, as the tree leaves a slow consumer: TryNext gives the frames
// before the end.
type endedClient struct {
	plugins.TreeClient // not called
	mu                 sync.Mutex
	frames             []plugins.TreeFrame
	gone               error
	disconnected       chan struct{}
	once               sync.Once
}

func (r *endedClient) TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
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

func (r *endedClient) OnReady(func()) {}

func (r *endedClient) Err() error { return r.gone }

func (r *endedClient) Disconnect() { r.once.Do(func() { close(r.disconnected) }) }

// recordingTrees is the host's end of a Trees call that records what the
// host sends.
type recordingTrees struct {
	grpc.ServerStream
	sends chan *pluginv3.TreeDown
}

func (s *recordingTrees) Send(d *pluginv3.TreeDown) error {
	s.sends <- d
	return nil
}

func (s *recordingTrees) Recv() (*pluginv3.TreeUp, error) { select {} }

// TestTreesEndedClient: a client that the tree ended is told so, and
// disconnected, at once, also when the plugin holds no credit for it
// (it reads nothing): the frames still queued then go with the client.
// With credit, the frames go first. Version 2 held such a client until
// the plugin read again, or a second passed.
func TestTreesEndedClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		credit int64
		frames int // sent before the end
	}{
		{"no credit", 0, 0},
		{"credit", treeWindow, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := &recordingTrees{sends: make(chan *pluginv3.TreeDown, 8)}
			tt := &hostTrees{srv: &hostServer{}, stream: stream, ctx: t.Context(), clients: make(map[uint64]*hostTreeClient), wake: make(chan struct{}, 1), quit: make(chan struct{})}
			done := make(chan struct{})
			go func() {
				defer close(done)
				tt.write()
			}()
			defer func() {
				close(tt.quit)
				<-done
			}()
			c := &endedClient{gone: &plugins.TreeGone{Code: 1008, Reason: "slow consumer"}, disconnected: make(chan struct{})}
			for i := range 2 {
				c.frames = append(c.frames, plugins.TreeFrame{Seq: uint64(i + 1), Data: fmt.Appendf(nil, `{"n":%d}`, i)})
			}
			hc := &hostTreeClient{n: 7, id: "slow", credit: newCredit(tc.credit)}
			if !tt.put(hc) {
				t.Fatal("put")
			}
			hc.c, hc.r = c, c
			tt.ready(hc)
			frames := 0
			for {
				var d *pluginv3.TreeDown
				select {
				case d = <-stream.sends:
				case <-time.After(15 * time.Second): // a hang guard
					t.Fatal("the host never sent the client's end")
				}
				if d.GetClient() != 7 {
					t.Fatalf("a message of client %d", d.GetClient())
				}
				frames += len(d.GetFrames().GetFrames())
				if g := d.GetGone(); g != nil {
					if g.GetCode() != 1008 || string(g.GetReason()) != "slow consumer" {
						t.Errorf("gone %d %q", g.GetCode(), g.GetReason())
					}
					break
				}
			}
			if frames != tc.frames {
				t.Errorf("%d frames before the end, want %d", frames, tc.frames)
			}
			select {
			case <-c.disconnected:
			case <-time.After(15 * time.Second): // a hang guard
				t.Fatal("the host never disconnected the client")
			}
			if tt.get(7) != nil {
				t.Error("the call still holds the client")
			}
		})
	}
}
