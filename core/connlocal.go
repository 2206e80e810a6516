package core

import (
	"context"
	"time"
)

// ConnLocal is what the server and middleware keep on one connection
// accepted by a [Listen] listener for its HTTP/1 requests, which come one at
// a time: state reused from one request to the next, paid once per
// connection rather than allocated or pooled per request, and the start of
// the request being served, so that a request's clock is read once at its
// start, not once per piece that measures it.
//
// Only the connection's own goroutine, serving an HTTP/1 request, may use a
// ConnLocal (requests of a multiplexed protocol such as HTTP/2 share a
// connection and must not); what a request took from it must not be used
// after that request's handler returned.
type ConnLocal struct {
	// Start is when the request being served started, on [Clock]; 0
	// when whoever serves the connection (package server does) did not
	// note it. Whoever sets it clears it when the request ends.
	Start time.Duration

	kept []keptValue
}

type keptValue struct{ key, value any }

// ConnLocalFrom returns the [ConnLocal] of the connection of ctx, a context
// of the connection ([ConnContext]) or of one of its requests; nil when
// the connection was not accepted by a [Listen] listener. Call it only for
// HTTP/1 requests (see [ConnLocal]).
func ConnLocalFrom(ctx context.Context) *ConnLocal {
	c, ok := ctx.Value(connKey{}).(*reasonConn)
	if !ok {
		return nil
	}
	return &c.local
}

// Value returns the value kept under key, nil when none. Keys compare as
// context keys do: use a key of a type of one's own.
func (l *ConnLocal) Value(key any) any {
	for i := range l.kept {
		if l.kept[i].key == key {
			return l.kept[i].value
		}
	}
	return nil
}

// Keep keeps value under key for the connection's later requests,
// replacing what key had.
func (l *ConnLocal) Keep(key, value any) {
	for i := range l.kept {
		if l.kept[i].key == key {
			l.kept[i].value = value
			return
		}
	}
	l.kept = append(l.kept, keptValue{key, value})
}

// epoch is the start of [Clock].
var epoch = time.Now()

// Clock returns the time since a fixed instant of the process on the
// monotonic clock: a duration is the difference of two readings, which
// cost one clock read each where time.Now costs two (wall and monotonic).
// [ConnLocal.Start] is on this clock.
func Clock() time.Duration { return time.Since(epoch) }
