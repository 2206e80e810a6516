package core

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestMount(t *testing.T) {
	for _, tc := range []struct {
		name, target, strip, want string
	}{
		{"not stripped", "/channel/a?x=1", "", ""},
		{"stripped", "/rt/channel/a?x=1", "/rt/channel", "/rt/channel"},
		{"stripped to nothing", "/rt/channel", "/rt/channel", "/rt/channel"},
		{"escaped", "/rt/a%20b", "/rt", "/rt"},
		{"escaped prefix", "/a%20b/c", "/a b", "/a b"},
		{"absolute form", "http://example.org/rt/a", "/rt", "/rt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, consumed string
			var h http.Handler = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = Mount(r)
				consumed = Prepare(r).Consumed
			})
			if tc.strip != "" {
				h = http.StripPrefix(tc.strip, h)
			}
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tc.target, nil))
			if got != tc.want || consumed != tc.want {
				t.Errorf("Mount %q, Consumed %q, want %q", got, consumed, tc.want)
			}
		})
	}
	// A rewrite that changes the path leaves nothing to name.
	r := httptest.NewRequest("GET", "/a/b", nil)
	r.URL.Path = "/c"
	if got := Mount(r); got != "" {
		t.Errorf("after a rewrite: %q", got)
	}
}
