package websocket

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of [Options].
const (
	DefaultReadLimit      = 64 << 10
	DefaultMaxConnections = 10_000
	DefaultPingInterval   = 25 * time.Second
	DefaultPongTimeout    = 60 * time.Second
	DefaultWriteTimeout   = 10 * time.Second
	DefaultCloseTimeout   = 5 * time.Second
)

// Options configures a [Transport]. The zero value is safe: every zero
// field takes its default.
type Options struct {
	// ReadLimit is the largest message read, in bytes (default 64 KiB). A
	// larger message closes the connection with 1009 (message too big).
	ReadLimit int64

	// Origins are the origins allowed on the handshake besides the
	// request's own host. A request without an Origin header (not a
	// browser) always passes. A pattern is a host ("example.org"), a host
	// and port ("localhost:3000"), either of them with a scheme
	// ("http://localhost:3000": the scheme must match too), or a host
	// whose first label is "*" ("*.example.org": any subdomain, not
	// example.org itself). "*" alone allows every origin. Hosts compare
	// without regard to case; a pattern without a port matches only an
	// origin without one. A malformed pattern matches nothing (see
	// [Options.Validate]).
	Origins []string

	// MaxConnections caps the open connections (default 10,000); over
	// the cap a handshake fails with 503 Too Many Connections.
	MaxConnections int

	// PingInterval is how often a ping goes to a connection (default
	// 25 s); negative sends none.
	PingInterval time.Duration

	// PongTimeout is how long a peer may stay silent (no message, pong
	// or ping) before its connection is closed as dead (default 60 s;
	// it is given at most an eighth more); negative never. When pings are on it is kept above PingInterval
	// (raised to twice PingInterval if it is not).
	PongTimeout time.Duration

	// WriteTimeout bounds one write to a client (default 10 s): a client
	// that does not take the bytes in time has its connection closed. A
	// write is given at least WriteTimeout and at most an eighth more.
	WriteTimeout time.Duration

	// CloseTimeout bounds the wait for the peer's close frame after a
	// close frame was sent (default 5 s); the TCP connection is closed
	// then at the latest.
	CloseTimeout time.Duration
}

// Validate reports fields that New would silently correct or that can
// never match: negative limits, an inconsistent PongTimeout, malformed
// origin patterns. Call it when reading configuration, to refuse it at
// start-up.
func (o Options) Validate() error {
	var errs []error
	if o.ReadLimit < 0 {
		errs = append(errs, fmt.Errorf("websocket: negative read limit %d", o.ReadLimit))
	}
	if o.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("websocket: negative connection cap %d", o.MaxConnections))
	}
	if o.WriteTimeout < 0 || o.CloseTimeout < 0 {
		errs = append(errs, errors.New("websocket: negative write or close timeout"))
	}
	n := o.withDefaults()
	if o.PongTimeout > 0 && n.PingInterval > 0 && o.PongTimeout <= n.PingInterval {
		errs = append(errs, fmt.Errorf("websocket: pong timeout %v not above ping interval %v", o.PongTimeout, n.PingInterval))
	}
	for _, p := range o.Origins {
		if _, err := parseOrigin(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field set to its default and
// PongTimeout kept above PingInterval.
func (o Options) withDefaults() Options {
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PongTimeout == 0 {
		o.PongTimeout = DefaultPongTimeout
	}
	if o.PingInterval > 0 && o.PongTimeout > 0 && o.PongTimeout <= o.PingInterval {
		o.PongTimeout = 2 * o.PingInterval
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	return o
}
