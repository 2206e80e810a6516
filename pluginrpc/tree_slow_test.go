package pluginrpc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	tree "github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// lazyPlugin attaches one tree client, "lazy", subscribed to /room, and
// reads its frames only when asked: GET /lazy/open attaches it, GET
// /lazy/drain reads until the client's end and answers what it read.
type lazyPlugin struct{}

var lazyClient struct {
	mu sync.Mutex
	c  plugins.TreeClient
}

func (lazyPlugin) Routes(_ context.Context, offered plugins.Services) ([]plugins.Route, error) {
	t := offered.Tree
	if t == nil {
		return nil, fmt.Errorf("lazy plugin: the host offers no tree")
	}
	open := func(ctx context.Context, _ *core.Request) (*core.Response, error) {
		c, err := t.Connect(context.WithoutCancel(ctx), "lazy", "")
		if err != nil {
			return nil, err
		}
		if err := c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/room","msg_id":1}`)); err != nil {
			return nil, err
		}
		frames, err := c.Next(context.WithoutCancel(ctx), nil)
		if err != nil || len(frames) != 1 {
			return nil, fmt.Errorf("SUBSCRIBE: %d frames, %v", len(frames), err)
		}
		lazyClient.mu.Lock()
		lazyClient.c = c
		lazyClient.mu.Unlock()
		return &core.Response{Body: frames[0].Data}, nil
	}
	drain := func(ctx context.Context, _ *core.Request) (*core.Response, error) {
		lazyClient.mu.Lock()
		c := lazyClient.c
		lazyClient.mu.Unlock()
		n := 0
		var buf []plugins.TreeFrame
		for {
			var err error
			buf, err = c.Next(ctx, buf)
			n += len(buf)
			if err != nil {
				return &core.Response{Body: fmt.Appendf(nil, "%d frames, then %v", n, err)}, nil
			}
		}
	}
	return []plugins.Route{
		{Match: `GET /lazy/open`, Handler: core.HandlerFunc(open)},
		{Match: `GET /lazy/drain`, Handler: core.HandlerFunc(drain)},
	}, nil
}

// watchedTree is the tree in process whose clients report their
// Disconnect on disconnected: the host disconnects a client that the
// tree ended, or the plugin released, or whose Trees call ended.
type watchedTree struct {
	plugins.Tree
	disconnected chan string
	taken        chan struct{} // closed when the host first takes a frame
}

func (t watchedTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	if err != nil {
		return nil, err
	}
	return &watchedClient{TreeClient: c, treeReadier: c.(treeReadier), t: t, id: id}, nil
}

type watchedClient struct {
	plugins.TreeClient
	treeReadier
	t         watchedTree
	id        string
	once      sync.Once
	takenOnce sync.Once
}

// TryNext reports the first frames the host takes on t.taken.
func (c *watchedClient) TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	frames, err := c.treeReadier.TryNext(buf)
	if len(frames) > 0 {
		c.takenOnce.Do(func() { close(c.t.taken) })
	}
	return frames, err
}

func (c *watchedClient) Disconnect() {
	c.once.Do(func() { c.t.disconnected <- c.id })
	c.TreeClient.Disconnect()
}

// TestTreeSlowPlugin: a plugin that does not read its tree client's frames
// holds the host only as long as the tree's queue of the client has room.
// When it overflows, the tree ends the client (1008 "slow consumer") and
// the host tells the plugin and disconnects the client at once, while the
// plugin still reads nothing (it holds no credit: the host never waits
// for it); the plugin then reads the frames sent before and that end.
func TestTreeSlowPlugin(t *testing.T) {
	tr, err := tree.New(t.Context(), nil, tree.Options{QueueFrames: 64, Epoch: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	wt := watchedTree{Tree: channelhost.TreeOf(tr), disconnected: make(chan string, 4), taken: make(chan struct{})}
	s := newTreeServer(t, wt, load(t, Config{Name: "lazy", Cmd: childCmd("lazytree")}))
	if got := httpGet(t, s.srv.URL+"/lazy/open"); got != `{"msg_id":1,"code":"success","epoch":"e1"}` {
		t.Fatalf("open: %s", got)
	}
	data := `"` + strings.Repeat("x", 1000) + `"`
	// One frame is taken by the host (and so sent to the plugin) before
	// the flood, so the drain has frames sent before the end to read
	// however the scheduler orders the host and the publisher.
	tr.Call(t.Context(), "pub", "", []byte(`{"method":"NOTIFY","resource":"/room","data":`+data+`}`))
	select {
	case <-wt.taken:
	case <-time.After(15 * time.Second): // a hang guard
		t.Fatal("the host never took the first frame")
	}
	for i := 0; tr.Stats().SlowConsumers == 0; i++ {
		if i == 100_000 {
			t.Fatal("the tree never ended the client that its plugin does not read")
		}
		tr.Call(t.Context(), "pub", "", []byte(`{"method":"NOTIFY","resource":"/room","data":`+data+`}`))
	}
	select {
	case id := <-wt.disconnected:
		if id != "lazy" {
			t.Fatalf("disconnected %q", id)
		}
	case <-time.After(15 * time.Second): // a hang guard
		t.Fatal("the host still holds a client the tree ended")
	}
	got := httpGet(t, s.srv.URL+"/lazy/drain")
	if !strings.HasSuffix(got, " frames, then "+(&plugins.TreeGone{Code: 1008, Reason: "slow consumer"}).Error()) || strings.HasPrefix(got, "0 frames") {
		t.Errorf("drain: %s", got)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s %v", url, resp.Status, b, err)
	}
	return string(b)
}
