package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/client"
)

// Example subscribes to a room, writes to it, and reads what the
// subscription delivers. After a dropped connection the client would
// resume the subscription by itself; an Event with Resync says how that
// went.
func Example() {
	url, stop := startServer()
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(ctx, url, nil) // e.g. "ws://localhost:8000/channel"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "/rooms/lobby")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Post(ctx, "/rooms/lobby", map[string]string{"text": "hello"}, true); err != nil {
		log.Fatal(err)
	}
	ev := <-sub.Events()
	switch {
	case ev.Notification != nil:
		fmt.Println(ev.Notification.Notify, string(ev.Notification.Entity))
	case ev.Resync != nil && !ev.Resync.Recovered:
		state, _ := sub.Reload(ctx, "?deep=2") // read the room again
		fmt.Println(string(state.Entity))
	}
	_, err = c.Get(ctx, "/rooms/nowhere")
	fmt.Println(err)
	// Output:
	// UPDATE {"text":"hello"}
	// client: not found
}

// ExampleOptions gives a client the URLs of several nodes, where it
// starts at a random one and moves on when one fails, and credentials
// fetched afresh before each connection attempt. A handshake refused with
// 401 or 403 ends the client in the state Unauthorized, and Err says why.
func ExampleOptions() {
	url, stop := startServer()
	defer stop()
	ctx := context.Background()

	c, err := client.Dial(ctx, "", &client.Options{
		URLs: []string{url}, // e.g. "wss://a.example.org/channel", "wss://b.example.org/channel"
		HeaderFunc: func(ctx context.Context) (http.Header, error) {
			token := "..." // e.g. from the app's session store, renewed when it expires
			return http.Header{"Cookie": {"user_id=42; token=" + token}}, nil
		},
		OnState: func(s client.State) {
			if s == client.Unauthorized {
				log.Print("log in again") // c.Err() wraps client.ErrUnauthorized
			}
		},
	})
	if errors.Is(err, client.ErrUnauthorized) {
		log.Fatal("the server refused the credentials: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.State())
	// Output: open
}

// startServer serves a resource tree at a WebSocket URL, as reso does at
// /channel, and returns the URL and what stops it.
func startServer() (string, func()) {
	ctx := context.Background()
	tree, err := channel.New(ctx, nil, channel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	d := channelhost.NewHandler(tree, channelhost.Options{}) // anonymous callers only
	mux := http.NewServeMux()
	mux.Handle("/channel", http.StripPrefix("/channel", d))
	srv := httptest.NewServer(mux)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel", func() {
		d.GoAway()
		srv.Close()
		d.Close(ctx)
		tree.Close()
	}
}
