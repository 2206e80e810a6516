package channelhost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
)

// TestCloseWhileHandshaking: handshakes that arrive while the handler
// closes (a client reconnecting at shutdown, as the Go client's example
// does) end at once, and none starts a session handler that Close's wait
// misses: under -race, a WaitGroup Add from zero beside Close's Wait was
// reported as a data race (.ci/run, client's example).
func TestCloseWhileHandshaking(t *testing.T) {
	ctx := context.Background()
	tree, err := channel.New(ctx, nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	d := channelhost.NewHandler(tree, channelhost.Options{})
	mux := http.NewServeMux()
	mux.Handle("/channel", http.StripPrefix("/channel", d))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel"

	var stop atomic.Bool
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				c, _, err := gorilla.DefaultDialer.Dial(url, nil)
				if err != nil {
					continue
				}
				opened.Add(1)
				// A session that started reads until the server ends it.
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						break
					}
				}
				c.Close()
			}
		})
	}
	// Every client holds a session until the server ends it.
	await(t, func() bool { return opened.Load() >= 4 }, "4 sessions open")
	d.GoAway()
	if err := d.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Handshakes go on after Close: each ends at once.
	n := opened.Load() + 8
	await(t, func() bool { return opened.Load() >= n }, "8 handshakes after Close, each ended at once")
	stop.Store(true)
	wg.Wait()
}

// await polls cond until it holds, or fails t after a generous bound
// naming what was awaited.
func await(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
