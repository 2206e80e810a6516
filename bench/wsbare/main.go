// Command wsbare is the baseline of reso's channel benchmarks
// (bench/channel-vs-bare.sh): a bare gorilla/websocket broadcaster that
// does nothing else, the practical limit of serving the channel's
// fan-out in Go. It speaks the part of reso's WebSocket door
// (docs/channel.md) that the load client of bench/channel uses, with the
// bytes reso sends:
//
//   - SUBSCRIBE /p: {"msg_id":ID,"code":"success","epoch":"<16 hex>"} (the
//     epoch is fixed for the process);
//   - UNSUBSCRIBE /p: {"msg_id":ID,"code":"success"};
//   - NOTIFY /p with data: {"notify":"NOTIFY","resource":"/p","data":DATA,
//     "from":"<client id>","seq":N} to every subscriber of /p, encoded
//     once and shared, then {"msg_id":ID,"code":"success","sent_count":N}
//     to the publisher, or "no subscriber" when there was none;
//   - PUT /p with an entity (an object): {"msg_id":ID,"code":"success"},
//     the entity kept at /p (in a map) until the connection that PUT it
//     last closes, as a transient resource of reso's; nothing is notified;
//   - anything else: a failed reply (invalid JSON, missing resource,
//     invalid resource, invalid entity, unknown method).
//
// Each message is parsed with encoding/json; a text message must be valid
// UTF-8 (RFC 6455 §8.1). Each connection has one reader goroutine and a
// queue bounded in bytes (a client that falls -queue-bytes behind is
// disconnected); a writer goroutine runs while frames are queued (an idle
// connection holds only its reader), takes every frame queued (each made
// once: a notification once for all its subscribers) and writes
// them in one system call (conn.go), with a write deadline. The
// read and write buffers have reso's sizes (websocket): 512 bytes
// to read, 4 KiB pooled buffers to write. There is no ping, no
// authentication, no history and no store.
//
// It logs "bare listening addr=HOST:PORT" on stderr (bench/lib.sh
// start_server waits for it) and, with -admin-addr, "bare admin listening
// addr=HOST:PORT": there /metrics has go_goroutines and /debug/pprof/ the
// runtime's profiles, as reso's admin listener with -pprof.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("wsbare", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	admin := fs.String("admin-addr", "", "address of /metrics (go_goroutines) and /debug/pprof/; empty: none")
	queue := fs.Int("queue-bytes", 1<<20, "bytes a connection's queue holds before it is dropped as too slow")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *queue < 1024 {
		return fmt.Errorf("-queue-bytes %d: want at least 1024", *queue)
	}
	h := newHub(randomHex(), *queue)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *admin != "" {
		aln, err := net.Listen("tcp", *admin)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bare admin listening addr=%s\n", aln.Addr())
		go http.Serve(aln, adminMux())
	}
	fmt.Fprintf(os.Stderr, "bare listening addr=%s\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("/channel", h)
	// The time and size limits of reso's server (as bench/bare).
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	return srv.Serve(ln)
}

// adminMux serves go_goroutines and the runtime's profiles.
func adminMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE go_goroutines gauge\ngo_goroutines %d\n", runtime.NumGoroutine())
	})
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}

// randomHex returns 16 random hex digits: an epoch or a client id.
func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
