package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// contentLength is the Content-Length of every answer.
var contentLength = []string{strconv.Itoa(len(body))}

// answer writes body, as the in-process floor and the peer's bytes.
func answer(w http.ResponseWriter, _ *http.Request) {
	writeBody(w, body)
}

// writeBody writes b as a JSON answer with its length, as reso does.
func writeBody(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = contentLength
	w.Write(b)
}

// serve listens on addr and serves h with the limits cmd/reso sets (as
// bench/bare does), after printing the address it listens on (and extra,
// if not empty). It returns only on an error.
func serve(addr string, h http.HandlerFunc, extra string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "rpcfloor listening addr=%s%s\n", ln.Addr(), extra)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	return srv.Serve(ln)
}
