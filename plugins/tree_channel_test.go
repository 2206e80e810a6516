package plugins_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
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
	h := &plugins.Host{Services: plugins.NewSettings(nil), Tree: plugins.TreeOf(tree), Sessions: p}
	put := make(chan string, 1)
	plugin := plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
		tr := host.(plugins.Tree)
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
	table, err := h.Routes(t.Context(), []plugins.Entry{{Name: "p", Plugin: plugin}})
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
