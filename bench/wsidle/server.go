package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	coder "github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"
)

// serve runs the echo server of one library until SIGTERM or SIGINT.
func serve(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	lib := fs.String("lib", "gorilla", "library: gorilla, coder or transport (reso's websocket)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	max := fs.Int("max", 10_000, "most connections (transport)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h http.Handler
	switch *lib {
	case "gorilla":
		h = gorillaEcho()
	case "coder":
		h = coderEcho()
	case "transport":
		h = transportEcho(*max)
	default:
		return fmt.Errorf("unknown library %q", *lib)
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q is not loopback", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("wsidle listening addr=%s lib=%s\n", ln.Addr(), *lib)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sig {
			if s != syscall.SIGUSR1 {
				_ = ln.Close()
				return
			}
			runtime.GC()
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("stats goroutines=%d heap_inuse_kb=%d stack_inuse_kb=%d sys_kb=%d\n",
				runtime.NumGoroutine(), ms.HeapInuse>>10, ms.StackInuse>>10, ms.Sys>>10)
		}
	}()
	err = http.Serve(ln, h)
	if err != nil && !isClosed(err) {
		return err
	}
	return nil
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

// gorillaEcho is gorilla/websocket tuned for idle connections: no buffers
// of its own; it reuses the read and write buffers net/http hijacks, which
// the handler's goroutine keeps alive anyway (a small read buffer of its own
// plus a write buffer pool measured 18.4 KB per connection, this 17.2).
func gorillaEcho() http.Handler {
	up := gorilla.Upgrader{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(64 << 10)
		for {
			t, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(t, p); err != nil {
				return
			}
		}
	})
}

// coderEcho is coder/websocket with its defaults (no compression).
func coderEcho() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := coder.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 10)
		ctx := context.Background()
		for {
			t, p, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, t, p); err != nil {
				return
			}
		}
	})
}
