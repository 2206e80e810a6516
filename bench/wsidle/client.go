package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	gorilla "github.com/gorilla/websocket"
)

// client opens the idle connections and holds them.
func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address HOST:PORT")
	n := fs.Int("n", 1000, "connections (at most 10,000)")
	conc := fs.Int("c", 200, "connections opened at once")
	hold := fs.Duration("hold", 60*time.Second, "longest time to hold the connections (at most 5m)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *n < 1 || *n > 10_000 || *conc < 1 || *hold <= 0 || *hold > 5*time.Minute {
		return fmt.Errorf("client: want -addr, 1 <= -n <= 10000, -c >= 1, 0 < -hold <= 5m")
	}
	d := gorilla.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 256, WriteBufferSize: 256}
	url := "ws://" + *addr + "/"
	conns := make([]*gorilla.Conn, *n)
	var failed atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, *conc)
	var wg sync.WaitGroup
	msg := []byte(`{"method":"SUBSCRIBE","resource":"/idle","msg_id":1}`)
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := open(&d, url, msg)
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	fmt.Printf("ready ok=%d failed=%d\n", int64(*n)-failed.Load(), failed.Load())
	if err, ok := firstErr.Load().(error); ok {
		fmt.Fprintln(os.Stderr, "wsidle client: first error:", err)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(*hold):
	}
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	return nil
}

// open dials one connection, sends msg and waits for its echo.
func open(d *gorilla.Dialer, url string, msg []byte) (*gorilla.Conn, error) {
	c, resp, err := d.Dial(url, http.Header{})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial: %s: %w", resp.Status, err)
		}
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := c.WriteMessage(gorilla.TextMessage, msg); err != nil {
		c.Close()
		return nil, err
	}
	_, p, err := c.ReadMessage()
	if err != nil {
		c.Close()
		return nil, err
	}
	if !bytes.Equal(p, msg) {
		c.Close()
		return nil, fmt.Errorf("echo: got %q", p)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}
