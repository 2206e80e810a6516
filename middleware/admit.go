package middleware

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/core"
)

// Admit refuses the requests that would open a long-lived connection
// while check returns an error: a WebSocket handshake (a request with
// Upgrade: websocket) and a GET kept open (a GET with Accept:
// text/event-stream or the query parameter watch). A refused request is
// answered at once, before any upgrade, with check's status error (any
// other error: 503 Service Unavailable; its text is never written), the
// status line as text/plain and Retry-After: retryAfter in whole seconds,
// at least 1. Other requests, and connections already open, are not
// concerned. check is called for every such request: it must be cheap.
//
// A fleet node behind the log refuses so (app: -fleet-max-lag): a node
// that cannot keep up should not take more clients on, and the clients
// back off and try again, through a load balancer on another node.
func Admit(check func() error, retryAfter time.Duration) func(http.Handler) http.Handler {
	secs := strconv.FormatInt(int64(max((retryAfter+time.Second-1)/time.Second, 1)), 10)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if longLived(r) {
				if err := check(); err != nil {
					if _, ok := core.AsStatus(err); !ok {
						err = core.Status(http.StatusServiceUnavailable, "Service Unavailable")
					}
					w.Header().Set("Retry-After", secs)
					core.WriteError(w, r, err)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// longLived reports whether r asks for a connection that stays open: a
// WebSocket handshake or a GET kept open.
func longLived(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "websocket") {
				return true
			}
		}
	}
	if r.Method != http.MethodGet {
		return false
	}
	if core.EventStream(r.Header) {
		return true
	}
	if !strings.Contains(r.URL.RawQuery, "watch") {
		return false
	}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	return q.Has("watch")
}
