package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkServeConfig measures the whole handler chain for GET /config,
// without the network.
func BenchmarkServeConfig(b *testing.B) {
	cfg, err := parseFlags([]string{"-db", ":memory:"}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	h, cleanup, err := build(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	r := httptest.NewRequest("GET", "/config", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}
