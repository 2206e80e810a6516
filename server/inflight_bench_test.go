package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkInFlight measures what tracking costs a request on connections
// of their own, as on an HTTP/1 server.
func BenchmarkInFlight(b *testing.B) {
	f := newInFlight()
	h := f.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		ctx := f.connContext(context.Background(), c1)
		r := httptest.NewRequest("GET", "/config", nil).WithContext(ctx)
		for pb.Next() {
			h.ServeHTTP(nil, r)
		}
	})
}
