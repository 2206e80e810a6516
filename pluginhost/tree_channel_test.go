package pluginhost_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// TestTreeOfSessionEnd runs the host's tree service on package channel's
// tree: the transient resource of a session whose handler returned
// without disconnecting its client is deleted when the session ends.
func TestTreeOfSessionEnd(t *testing.T) {
	tree, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	p := make(pipes, 1)
	h := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil), Tree: channelhost.TreeOf(tree)}, Sessions: p}
	put := make(chan string, 1)
	plugin := plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
		tr := host.Tree
		return []plugins.Route{{Match: "GET /s", Session: core.SessionHandlerFunc(func(ctx context.Context, _ *core.Request, s core.Session) error {
			c, err := tr.Connect(ctx, s.ID(), "")
			if err != nil {
				return err
			}
			if err := c.Exec(ctx, []byte(`{"method":"PUT","resource":"/s/`+s.ID()+`","msg_id":1}`)); err != nil {
				return err
			}
			frames, err := c.Next(ctx, nil)
			if err != nil {
				return err
			}
			put <- string(frames[0].Data)
			_, _ = s.Recv(ctx)
			return nil // the client is left connected
		})}}, nil
	})
	table, err := h.Routes(t.Context(), []pluginhost.Entry{{Name: "p", Plugin: plugin}})
	if err != nil {
		t.Fatal(err)
	}
	// After the host's own hook: the session outlives its request.
	done := make(chan struct{})
	h.OnSessionEnd(func(string) { close(done) })
	rt, err := core.NewRouter(table)
	if err != nil {
		t.Fatal(err)
	}
	go rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/s", nil))
	c := <-p
	if r := <-put; !strings.Contains(r, `"success"`) {
		t.Fatalf("PUT: %s", r)
	}
	get := []byte(`{"method":"GET","resource":"/s/` + c.ID() + `","msg_id":2}`)
	if r := string(tree.Call(t.Context(), "t", "", get)); !strings.Contains(r, `"success"`) {
		t.Fatalf("GET while the session is open: %s", r)
	}
	c.Close(core.CloseNormal, "")
	<-done
	if r := string(tree.Call(t.Context(), "t", "", get)); !strings.Contains(r, `"not found"`) {
		t.Errorf("GET after the session ended: %s", r)
	}
}

// treeReadier is what the doors find on the clients of channelhost.TreeOf to
// drain them without a goroutine waiting in Next.
type treeReadier interface {
	TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error)
	OnReady(f func())
}

// TestTreeReadier checks that the host hands plugins the tree's own
// clients, so that what the tree's adapter offers besides the contract
// stays within reach: the in-process tree's can be drained without Next,
// the stand-in's cannot.
func TestTreeReadier(t *testing.T) {
	tree, err := channel.New(t.Context(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for _, tc := range []struct {
		name  string
		tree  plugins.Tree
		ready bool
	}{
		{"in process", channelhost.TreeOf(tree), true},
		{"stand-in", treetest.New(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var offered plugins.Tree
			h := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil), Tree: tc.tree}, Sessions: make(pipes, 1)}
			plugin := plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
				offered = host.Tree
				return nil, nil
			})
			if _, err := h.Routes(t.Context(), []pluginhost.Entry{{Name: "p", Plugin: plugin}}); err != nil {
				t.Fatal(err)
			}
			c, err := offered.Connect(t.Context(), "c-"+tc.name, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Disconnect()
			r, ok := c.(treeReadier)
			if ok != tc.ready {
				t.Fatalf("readier %v, want %v", ok, tc.ready)
			}
			if !ok {
				return
			}
			woken := make(chan struct{}, 8)
			r.OnReady(func() {
				select {
				case woken <- struct{}{}:
				default:
				}
			})
			if err := c.Exec(t.Context(), []byte(`{"method":"GET","resource":"/none","msg_id":1}`)); err != nil {
				t.Fatal(err)
			}
			<-woken
			frames, err := r.TryNext(nil)
			if err != nil || len(frames) != 1 || !strings.Contains(string(frames[0].Data), `"not found"`) {
				t.Fatalf("TryNext: %d frames, %v", len(frames), err)
			}
			c.Disconnect()
			<-woken
			if _, err := r.TryNext(frames); err == nil {
				t.Fatal("no Gone after Disconnect")
			}
		})
	}
}
