package doors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/plugins"
)

// barrierTree passes a tree's clients on; the Exec of a message that
// holds "/wait" returns once every session's such message is in Exec.
type barrierTree struct {
	plugins.Tree
	arrived *sync.WaitGroup
	release chan struct{}
}

func (t barrierTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	return barrierClient{c, t}, err
}

type barrierClient struct {
	plugins.TreeClient
	t barrierTree
}

func (c barrierClient) Exec(ctx context.Context, msg []byte) error {
	if strings.Contains(string(msg), "/wait") {
		c.t.arrived.Done()
		<-c.t.release
	}
	return c.TreeClient.Exec(ctx, msg)
}

// TestSessionExecPool checks the goroutines shared by the sessions for
// the tree's work: many sessions sending bursts at once, their first
// messages worked on all at the same time, each get every reply in the
// order of their messages, and once they are over the goroutines left are
// the few the pool keeps (16), not one per session or per message.
func TestSessionExecPool(t *testing.T) {
	const sessions, burst = 40, 50
	base := runtime.NumGoroutine()
	tr, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bt := barrierTree{Tree: channelhost.TreeOf(tr), arrived: new(sync.WaitGroup), release: make(chan struct{})}
	bt.arrived.Add(sessions)
	go func() { bt.arrived.Wait(); close(bt.release) }()
	h := &doors.Session{Tree: bt}
	var wg sync.WaitGroup
	for i := range sessions {
		server, client := core.Pipe(fmt.Sprint("s", i))
		wg.Go(func() {
			_ = h.ServeSession(context.Background(), &core.Request{}, server)
			_ = server.Close(core.CloseNormal, "")
		})
		wg.Go(func() {
			for n := 1; n <= burst; n++ {
				m := fmt.Sprintf(`{"method":"NOTIFY","resource":"/s%d","msg_id":%d}`, i, n)
				if n == 1 {
					m = `{"method":"NOTIFY","resource":"/wait","msg_id":1}`
				}
				if err := client.Send(t.Context(), core.Message{Data: []byte(m)}); err != nil {
					t.Errorf("session %d: send %d: %v", i, n, err)
					return
				}
			}
		})
		wg.Go(func() {
			defer client.Close(core.CloseNormal, "")
			for n := 1; n <= burst; n++ {
				m, err := client.Recv(t.Context())
				if err != nil {
					t.Errorf("session %d: reply %d: %v", i, n, err)
					return
				}
				var reply struct {
					MsgID int `json:"msg_id"`
				}
				if err := json.Unmarshal(m.Data, &reply); err != nil || reply.MsgID != n {
					t.Errorf("session %d: reply %s, want msg_id %d", i, m.Data, n)
					return
				}
			}
		})
	}
	wg.Wait()
	tr.Close()
	// The pool keeps at most 16 goroutines waiting; a few more may be
	// on their way out. The drain pool keeps its own, as many as drains
	// ran at once (doors.IdleDrainers).
	poll.Until(t, 10e9, "the sessions' goroutines to end", func() bool {
		return runtime.NumGoroutine() <= base+16+4+doors.IdleDrainers()
	})
}
