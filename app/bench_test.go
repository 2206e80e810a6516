package app

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/reso-project/reso/core"
)

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// configHandler returns the handler cmd/reso serves, without the access
// log, and the options it was built with; with metrics, as run assembles it
// with -admin-addr: the health answers and the Prometheus metrics.
func configHandler(b *testing.B, metrics bool) (http.Handler, *options) {
	cfg, err := parseFlags([]string{"-db", ":memory:"}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	if metrics {
		cfg.ops = &ops{}
		cfg.ops.metrics = newMetrics(cfg.ops)
	}
	h, cleanup, err := build(context.Background(), cfg, discardLogger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	return h, cfg
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkServeConfig measures the whole handler chain for GET /config,
// without the network, as cmd/reso assembles it without and with metrics
// (-admin-addr). The request's context is not a connection's (see
// core.ConnContext), so the router derives one; BenchmarkServeConfigWire
// measures the server's own setup.
func BenchmarkServeConfig(b *testing.B) {
	for _, metrics := range []bool{false, true} {
		name := "plain"
		if metrics {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) {
			h, _ := configHandler(b, metrics)
			r := httptest.NewRequest("GET", "/config", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkServeConfigConn measures the handler of the server cmd/reso
// runs (newServer: package server's in-flight record around the chain),
// with metrics on, for GET /config as it comes on a connection of that
// server: the request's context is the connection's (core.ConnContext), so
// the router and the middleware keep their state on the connection as
// they do over the wire, without the network's cost and noise.
func BenchmarkServeConfigConn(b *testing.B) {
	h, cfg := configHandler(b, true)
	srv := newServer(cfg, h, discardLogger)
	client, server := net.Pipe()
	defer client.Close()
	ln := core.Listen(&oneConnListener{c: server})
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(srv.ConnContext(context.Background(), c))
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/config", nil)
	rec := httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Body.String() != `{"config": {"directory": "."}}` {
		b.Fatalf("GET /config: %d %q", rec.Code, rec.Body)
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		srv.Handler.ServeHTTP(w, r)
	}
}

// oneConnListener accepts c once.
type oneConnListener struct{ c net.Conn }

func (l *oneConnListener) Accept() (net.Conn, error) {
	c := l.c
	if c == nil {
		return nil, net.ErrClosed
	}
	l.c = nil
	return c, nil
}
func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// BenchmarkServeConfigWire measures GET /config over a loopback keep-alive
// connection to the server cmd/reso runs (newServer: package server), against
// the same server with a bare handler that writes the same bytes: the
// difference of their allocations per request is what reso adds to
// net/http's (and this light client's). reso-metrics is reso with metrics on
// (-admin-addr), as operators run it and bench/config.sh measures it.
func BenchmarkServeConfigWire(b *testing.B) {
	body := []byte(`{"config": {"directory": "."}}`)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{"30"}
		w.Write(body)
	})
	reso, cfg := configHandler(b, false)
	resoMetrics, _ := configHandler(b, true)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"reso", reso}, {"reso-metrics", resoMetrics}} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := newServer(cfg, c.h, discardLogger)
			go srv.Serve(ln)
			defer srv.Close()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := []byte("GET /config HTTP/1.1\r\nHost: bench\r\n\r\n")
			br := bufio.NewReaderSize(conn, 4096)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				if err := readAnswer(br, len(body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readAnswer reads a 200 answer with a Content-Length of want bytes.
func readAnswer(br *bufio.Reader, want int) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return &answerError{line: string(line)}
	}
	n := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(h) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(h, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n != want {
		return &answerError{line: "Content-Length " + strconv.Itoa(n)}
	}
	_, err = br.Discard(n)
	return err
}

type answerError struct{ line string }

func (e *answerError) Error() string { return "unexpected answer: " + e.line }
