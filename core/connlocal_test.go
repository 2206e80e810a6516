package core

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type localKey struct{}
type otherKey struct{}

// TestConnLocal: a value kept on a connection of a Listen listener is
// there for the connection's next request, and for no other connection;
// a server without Listen has no ConnLocal.
func TestConnLocal(t *testing.T) {
	if ConnLocalFrom(context.Background()) != nil {
		t.Error("a ConnLocal without a connection")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := ConnLocalFrom(r.Context())
		if l == nil {
			io.WriteString(w, "none")
			return
		}
		n, _ := l.Value(localKey{}).(int)
		l.Keep(localKey{}, n+1)
		if l.Value(otherKey{}) != nil {
			t.Error("a value under a key never kept")
		}
		io.WriteString(w, strings.Repeat("x", n+1))
	})
	for _, listen := range []bool{true, false} {
		srv := httptest.NewUnstartedServer(h)
		if listen {
			srv.Listener = Listen(srv.Listener)
			srv.Config.ConnContext = ConnContext
		}
		srv.Start()
		get := func(c *http.Client) string {
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		one, two := srv.Client(), &http.Client{Transport: &http.Transport{}}
		got := []string{get(one), get(one), get(two), get(one)}
		want := "x xx x xxx"
		if !listen {
			want = "none none none none"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("Listen %v: %q, want %q", listen, got, want)
		}
		two.CloseIdleConnections()
		srv.Close()
	}
}
