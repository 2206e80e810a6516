// Command bare is the baseline of reso's end-to-end benchmarks: a bare
// net/http handler that answers every request with the bytes reso sends for
// GET /config, with no routing, rendering or middleware. Its http.Server has
// the time and size limits cmd/reso sets (newServer there), so that the two
// differ by their handlers only: the read deadlines those limits set on every
// request cost about a microsecond of their own.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	body := []byte(`{"config": {"directory": "."}}`)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bare listening addr=%s\n", ln.Addr())
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = []string{"30"}
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	err = srv.Serve(ln)
	fmt.Fprintln(os.Stderr, "bare:", err)
	os.Exit(1)
}
