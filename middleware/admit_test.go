package middleware

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
)

// TestAdmit: while check fails, WebSocket handshakes and GETs kept open
// are answered at once with check's status (503 for another error), the
// status line as text and Retry-After; other requests pass, and every
// request passes once check succeeds again.
func TestAdmit(t *testing.T) {
	var refuse atomic.Pointer[error]
	check := func() error {
		if e := refuse.Load(); e != nil {
			return *e
		}
		return nil
	}
	srv := httptest.NewServer(Admit(check, 1500*time.Millisecond)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "passed")
	})))
	defer srv.Close()
	type req struct {
		method, query string
		header        map[string]string
	}
	ws := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	cases := []struct {
		name     string
		req      req
		longLive bool
	}{
		{"websocket handshake", req{"GET", "", ws}, true},
		{"upgrade token among others", req{"GET", "", map[string]string{"Upgrade": "h2c, WebSocket"}}, true},
		{"event stream", req{"GET", "", map[string]string{"Accept": "application/json, text/event-stream;q=0.9"}}, true},
		{"watch", req{"GET", "?watch", nil}, true},
		{"watch=full", req{"GET", "?a=1&watch=full", nil}, true},
		{"plain GET", req{"GET", "", nil}, false},
		{"a query that names watch in a value", req{"GET", "?q=watch", nil}, false},
		{"PUT", req{"PUT", "?watch", nil}, false},
		{"POST with event-stream", req{"POST", "", map[string]string{"Accept": "text/event-stream"}}, false},
	}
	do := func(t *testing.T, r req) (*http.Response, string) {
		t.Helper()
		hr, err := http.NewRequest(r.method, srv.URL+"/x"+r.query, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range r.header {
			hr.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, refusal := range []struct {
				err  error
				line string
			}{
				{core.Status(http.StatusServiceUnavailable, "Behind the Log"), "503 Behind the Log\n"},
				{errors.New("secret detail"), "503 Service Unavailable\n"},
			} {
				refuse.Store(&refusal.err)
				resp, body := do(t, c.req)
				if !c.longLive {
					if resp.StatusCode != http.StatusOK || body != "passed" {
						t.Fatalf("refusing: %d %q, want it passed", resp.StatusCode, body)
					}
					continue
				}
				if resp.StatusCode != http.StatusServiceUnavailable || body != refusal.line ||
					resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Content-Type") != "text/plain" {
					t.Fatalf("refusing with %v: %d %q %q, want %q with Retry-After 2", refusal.err, resp.StatusCode, resp.Header, body, refusal.line)
				}
			}
			refuse.Store(nil)
			if resp, body := do(t, c.req); resp.StatusCode != http.StatusOK || body != "passed" || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("admitting: %d %q %q, want it passed", resp.StatusCode, resp.Header, body)
			}
		})
	}
}
