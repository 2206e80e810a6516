package pluginhost_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// pipes is a session transport whose client ends go to a channel.
type pipes chan core.Session

func (p pipes) Accept(_ http.ResponseWriter, _ *http.Request, id string) (core.Session, error) {
	server, client := core.Pipe(id)
	p <- client
	return server, nil
}

// treeHost returns a router of a host offering tree (and settings) to one
// plugin, whose session route at /s connects a tree client with the
// session's id and, when the client sends "leave", returns without
// disconnecting it (a plugin that forgot, or died); "bye" disconnects it
// first.
func treeHost(t *testing.T, tree plugins.Tree) (http.Handler, pipes, <-chan string) {
	t.Helper()
	p := make(pipes, 4)
	h := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil), Tree: tree}, Sessions: p}
	plugin := plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
		tr := host.Tree
		if tr == nil {
			return nil, errors.New("no tree offered")
		}
		if host.Settings == nil {
			return nil, errors.New("settings no longer offered next to the tree")
		}
		return []plugins.Route{{Match: "GET /s", Session: core.SessionHandlerFunc(func(ctx context.Context, _ *core.Request, s core.Session) error {
			c, err := tr.Connect(ctx, s.ID(), "me@example.com")
			if err != nil {
				return err
			}
			m, err := s.Recv(ctx)
			if err == nil && string(m.Data) == "bye" {
				c.Disconnect()
				c.Disconnect()
			}
			return nil
		})}}, nil
	})
	table, err := h.Routes(t.Context(), []pluginhost.Entry{{Name: "p", Plugin: plugin}})
	if err != nil {
		t.Fatal(err)
	}
	// After the host's own hook: the session outlives its request, and
	// is over when this reports its id.
	ended := make(chan string, 4)
	h.OnSessionEnd(func(id string) { ended <- id })
	rt, err := core.NewRouter(table)
	if err != nil {
		t.Fatal(err)
	}
	return rt, p, ended
}

// TestHostTreeSessionEnd checks that a session's tree client is
// disconnected exactly once when the session ends, whether its handler
// disconnected it, left it connected or the client closed the session.
func TestHostTreeSessionEnd(t *testing.T) {
	for _, how := range []string{"bye", "leave", "client closes"} {
		t.Run(how, func(t *testing.T) {
			tree := treetest.New()
			rt, p, ended := treeHost(t, tree)
			go rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/s", nil))
			c := <-p
			if how == "client closes" {
				c.Close(core.CloseNormal, "")
			} else if err := c.Send(t.Context(), core.Message{Data: []byte(how)}); err != nil {
				t.Fatal(err)
			}
			if id := <-ended; id != c.ID() {
				t.Fatalf("session %s ended, want %s", id, c.ID())
			}
			if n := tree.Disconnects(c.ID()); n != 1 {
				t.Errorf("client disconnected %d times, want 1", n)
			}
			if left := tree.Connected(); len(left) != 0 {
				t.Errorf("clients left: %v", left)
			}
		})
	}
}

// TestHostWithoutTree checks that a host without a tree offers none, and
// the settings it has.
func TestHostWithoutTree(t *testing.T) {
	h := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil)}}
	var offered plugins.Services
	_, err := h.Routes(t.Context(), []pluginhost.Entry{{Name: "p", Plugin: plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
		offered = host
		return nil, nil
	})}})
	if err != nil {
		t.Fatal(err)
	}
	if offered.Tree != nil {
		t.Error("a host without a tree offers one")
	}
	if offered.Settings == nil {
		t.Error("settings not offered")
	}
}
