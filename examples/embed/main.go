// Command embed is a plain net/http server that embeds pieces of reso: its
// authentication (middleware/auth, logins in SQLite), the doors of a
// resource tree under /rt/channel (WebSocket, HTTP door, GET kept open),
// a resource of its own behind authentication, exact reason phrases
// (package server) and a graceful shutdown. docs/embedding.md walks
// through it.
//
//	go run ./examples/embed -addr 127.0.0.1:8080
//	curl -u ann@example.com:secret -X PUT -d '{"topic":"hi"}' http://127.0.0.1:8080/rt/channel/rooms/lobby
//	curl http://127.0.0.1:8080/rt/channel/rooms/lobby
//	curl -u ann@example.com:secret http://127.0.0.1:8080/rt/whoami
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
	"github.com/reso-project/reso/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// Authentication: logins in SQLite (":memory:" keeps nothing), with
	// one login, ann@example.com, password "secret".
	store, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		return err
	}
	defer store.Close()
	secret, err := auth.LoadSecret("") // random, for this process only
	if err != nil {
		return err
	}
	a, err := auth.New(auth.Config{Store: store, Secret: secret})
	if err != nil {
		return err
	}
	if _, err := a.Register(ctx, "ann@example.com", "secret"); err != nil {
		return err
	}

	// The resource tree (in memory) and its doors, under /rt/channel.
	tree, err := channel.New(ctx, nil, channel.Options{})
	if err != nil {
		return err
	}
	defer tree.Close()
	ch := channelhost.NewHandler(tree, channelhost.Options{Challenge: a.Challenge})
	mux := http.NewServeMux()
	rt := auth.Optional(a)(http.StripPrefix("/rt/channel", ch))
	mux.Handle("/rt/channel", rt)
	mux.Handle("/rt/channel/", rt)
	// A resource of its own: who am I?
	mux.Handle("GET /rt/whoami", auth.Required(a)(core.HTTP(core.HandlerFunc(whoami))))

	// Serve with exact reason phrases; on SIGINT or SIGTERM, shut down:
	// sessions and streams end at once, requests get ten seconds.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := server.New(mux, server.Options{})
	srv.RegisterOnShutdown(ch.GoAway)
	fmt.Printf("listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	return ch.Close(sctx)
}

// whoami answers with the caller that auth.Required let through.
func whoami(_ context.Context, req *core.Request) (*core.Response, error) {
	return core.Value(req, core.Node{Name: "whoami", Content: req.Identity.Email}), nil
}
