package middleware

import (
	"net/http"
	"time"
)

// Observation is what [Metrics] measures of one answered request.
type Observation struct {
	Method   string
	Route    string // the Match of the route that answered; "" when none did
	Status   int    // as [Log] reports it (499 client gone, 101 taken over)
	Bytes    int64  // body bytes written
	Duration time.Duration
}

// Recorder receives what [Metrics] measures. Its methods are called
// concurrently. reso's own server wires one on the Prometheus client;
// a server that embeds Metrics passes its own.
type Recorder interface {
	// Start is called when a request comes in, Done when it is answered:
	// the difference is the requests in flight.
	Start()
	Done(Observation)
}

// Metrics returns middleware that reports every request to rec: its
// route (a pattern of the route table, never the raw path, so a label of
// bounded cardinality), status, bytes written and duration, and the
// requests in flight. It imports no metrics library.
//
// The writer passed on keeps Flush, Hijack, ReadFrom and Unwrap, as
// [Log]'s does.
func Metrics(rec Recorder) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := clock()
			rec.Start()
			sw := newStatusWriter(w, r)
			returned := false
			defer func() {
				rec.Done(Observation{
					Method:   r.Method,
					Route:    sw.routeName(),
					Status:   sw.status(r),
					Bytes:    sw.n,
					Duration: clock() - start,
				})
				if returned {
					sw.free()
				}
			}()
			sw.serve(next, r)
			returned = true
		})
	}
}

// epoch is the start of the middleware's monotonic clock.
var epoch = time.Now()

// clock is the time since epoch on the monotonic clock: a request's
// duration is the difference of two readings, which cost one clock read
// each where time.Now costs two (wall and monotonic).
func clock() time.Duration { return time.Since(epoch) }
