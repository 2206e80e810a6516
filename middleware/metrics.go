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
// The writer passed on has the optional interfaces of the one given, as
// [Log]'s does, and shares Log's wrapper and clock readings.
func Metrics(rec Recorder) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, made := wrap(w, r)
			start := s.started()
			rec.Start()
			returned := false
			defer func() {
				rec.Done(Observation{
					Method:   r.Method,
					Route:    s.routeName(),
					Status:   s.status(r),
					Bytes:    s.n,
					Duration: s.ended() - start,
				})
				if made {
					s.release(returned)
				}
			}()
			s.serve(next, r)
			returned = true
		})
	}
}
