package websocket

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

// Errors of a refused handshake. Accept returns them before writing
// anything; the host answers the request with their status line.
var (
	ErrNotWebSocket       = core.Status(http.StatusBadRequest, "Not a WebSocket Handshake")
	ErrVersion            = core.Status(http.StatusUpgradeRequired, "Upgrade Required")
	ErrForbiddenOrigin    = core.Status(http.StatusForbidden, "Forbidden")
	ErrTooManyConnections = core.Status(http.StatusServiceUnavailable, "Too Many Connections")
)

// RetryAfter is the Retry-After, in seconds, that Accept sets with
// ErrTooManyConnections: a place frees when a connection closes, which
// takes its time, and a client that comes back sooner only adds to the
// load.
const RetryAfter = "5"

// Transport is a session transport over WebSocket (the
// pluginhost.SessionTransport of package pluginhost). Its methods
// are safe for concurrent use.
type Transport struct {
	opt      Options
	origins  []originPattern
	upgrader websocket.Upgrader
	open     atomic.Int64

	// none is closed, and forgotten, when open falls to 0; nil while no
	// Wait waits. Guarded by mu.
	mu   sync.Mutex
	none chan struct{}
}

// New returns a transport with opt; zero fields take their defaults (see
// [Options]). New does not fail: use [Options.Validate] to refuse a bad
// configuration at start-up.
func New(opt Options) *Transport {
	t := &Transport{opt: opt.withDefaults()}
	for _, p := range opt.Origins {
		if o, err := parseOrigin(p); err == nil {
			t.origins = append(t.origins, o)
		}
	}
	t.upgrader = websocket.Upgrader{
		// Buffers of its own, not the 4 KiB ones net/http hijacks: the
		// host serves a session on a goroutine of its own and lets the
		// request's go, and with it net/http's buffers. Reads go
		// through a small buffer; a write buffer is taken from a pool
		// for a write only, so an idle connection holds none.
		ReadBufferSize:  readBufferSize,
		WriteBufferSize: writeBufferSize,
		WriteBufferPool: writeBuffers,
		// Accept checked the Origin already, and answers any refusal
		// itself: the library must write nothing.
		CheckOrigin: func(*http.Request) bool { return true },
		Error:       func(http.ResponseWriter, *http.Request, int, error) {},
	}
	return t
}

// Buffer sizes of a connection. Reads go through 512 bytes: the channel's
// client messages are mostly smaller, larger ones take a few more system
// calls, and every idle connection holds the buffer (bench/channel-idle.sh
// -n 10000: 17.0 KiB of server RSS per connection, 18.1 with 1 KiB).
const (
	readBufferSize  = 512
	writeBufferSize = 4 << 10
)

// writeBuffers are the write buffers shared by all connections.
var writeBuffers = &sync.Pool{}

// Open returns the number of open connections: accepted and not yet
// closed.
func (t *Transport) Open() int { return int(t.open.Load()) }

// release counts a connection less, and wakes Wait when none is left.
func (t *Transport) release() {
	if t.open.Add(-1) != 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.none != nil {
		close(t.none)
		t.none = nil
	}
}

// Wait waits until no connection is open: every session closed, its
// close handshake over (the peer's close frame came, or CloseTimeout
// passed) and its TCP connection closed. When ctx ends first it returns
// ctx's error. A server calls it at shutdown once it closed its sessions
// (pluginhost.Host.Close does): a process that exits in the middle of a
// close handshake drops the close frames still on their way, and resets
// the connections whose peers were still sending, so that they never see
// the close code.
func (t *Transport) Wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.open.Load() == 0 {
			t.mu.Unlock()
			return nil
		}
		if t.none == nil {
			t.none = make(chan struct{})
		}
		none := t.none
		t.mu.Unlock()
		select {
		case <-none:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Accept completes the WebSocket handshake of r and returns the session
// with id. A request that is not a valid handshake, comes from an origin
// that is not allowed, or would exceed MaxConnections fails before
// anything is written, with ErrNotWebSocket, ErrVersion,
// ErrForbiddenOrigin or ErrTooManyConnections; with the latter it sets
// the header Retry-After ([RetryAfter]) of the answer, which the host
// writes at once.
func (t *Transport) Accept(w http.ResponseWriter, r *http.Request, id string) (core.Session, error) {
	if err := checkHandshake(w, r); err != nil {
		return nil, err
	}
	if !originAllowed(r, t.origins) {
		return nil, ErrForbiddenOrigin
	}
	if t.open.Add(1) > int64(t.opt.MaxConnections) {
		t.release()
		w.Header().Set("Retry-After", RetryAfter)
		return nil, ErrTooManyConnections
	}
	h := &hijacker{ResponseWriter: w, timeout: t.opt.WriteTimeout}
	ws, err := t.upgrader.Upgrade(h, r, nil)
	if err != nil {
		t.release()
		return nil, fmt.Errorf("websocket: handshake: %w", err)
	}
	return newSession(t, id, ws, h.conn), nil
}

// checkHandshake checks what the library would otherwise refuse by
// writing an answer itself. On ErrVersion it sets the header that names
// the version spoken.
func checkHandshake(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet || !websocket.IsWebSocketUpgrade(r) {
		return ErrNotWebSocket
	}
	if !hasToken(r.Header, "Sec-Websocket-Version", "13") {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return ErrVersion
	}
	if !validKey(r.Header.Get("Sec-Websocket-Key")) {
		return ErrNotWebSocket
	}
	return nil
}

// hasToken reports whether a comma-separated header of h holds token.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// validKey reports whether k is a handshake key: 16 bytes in base64.
func validKey(k string) bool {
	b, err := base64.StdEncoding.DecodeString(k)
	return err == nil && len(b) == 16
}
