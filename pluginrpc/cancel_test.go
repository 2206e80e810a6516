package pluginrpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// handlerOf returns the handler of the route of p whose Match is match.
func handlerOf(t *testing.T, p plugins.Plugin, match string) core.Handler {
	t.Helper()
	rs, err := p.Routes(t.Context(), plugins.Services{Settings: pluginhost.NewSettings(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Match == match {
			return r.Handler
		}
	}
	t.Fatalf("no route %q", match)
	return nil
}

// TestCancelError checks that a request whose context is cancelled while
// the plugin works (the client went away) fails with the context's own
// error, as in process: not a new error that only has its text, which the
// host would answer as a 500.
func TestCancelError(t *testing.T) {
	for name, p := range transports(t) {
		t.Run(name, func(t *testing.T) {
			h := handlerOf(t, p, "GET /wait")
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := h.Handle(ctx, &core.Request{Method: "GET", Path: "/wait"})
				errc <- err
			}()
			time.Sleep(50 * time.Millisecond) // most often in the plugin by now; either way the answer is the same
			cancel()
			err := <-errc
			if err != context.Canceled {
				t.Errorf("error %#v (%v), want context.Canceled", err, err)
			}
		})
	}
}

// TestContextErrorCrosses checks that a handler's error that wraps a
// context's error keeps both its text and errors.Is across the boundary,
// while the request itself goes on.
func TestContextErrorCrosses(t *testing.T) {
	for name, p := range transports(t) {
		t.Run(name, func(t *testing.T) {
			_, err := handlerOf(t, p, "GET /ctxerr").Handle(t.Context(), &core.Request{Method: "GET", Path: ""})
			if err == nil || err.Error() != "test: gave up: context canceled" || !errors.Is(err, context.Canceled) {
				t.Errorf("error %#v (%v), want the text and errors.Is context.Canceled", err, err)
			}
			if _, ok := core.AsStatus(err); ok {
				t.Errorf("error %v is a status error", err)
			}
		})
	}
}
