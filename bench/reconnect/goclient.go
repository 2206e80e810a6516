package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/reso-project/reso/client"
)

// goClient is the Go client's process: it connects with the default
// options, subscribes, and writes "state <state>" on each change of
// state, until it is killed.
func goClient(args []string) error {
	fs := flag.NewFlagSet("goclient", flag.ExitOnError)
	url := fs.String("url", "", "the channel's ws:// URL")
	fs.Parse(args)
	states := make(chan client.State, 64)
	c := client.New(*url, &client.Options{OnState: func(s client.State) {
		select {
		case states <- s:
		default:
		}
	}})
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		if _, err := c.Subscribe(ctx, "/bench/reconnect"); err != nil {
			fmt.Fprintln(os.Stderr, "subscribe:", err)
		}
	}()
	for {
		select {
		case s := <-states:
			fmt.Printf("state %s\n", s)
		case <-ctx.Done():
			return nil
		}
	}
}
