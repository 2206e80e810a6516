package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func BenchmarkInFlight(b *testing.B) {
	f := &inFlight{m: make(map[*http.Request]time.Time)}
	h := f.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/config", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rs := *r
		for pb.Next() {
			h.ServeHTTP(nil, &rs)
		}
	})
}
