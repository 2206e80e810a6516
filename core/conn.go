package core

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Listen wraps ln for an http.Server whose ConnContext is [ConnContext]. The
// connections it accepts do two things net/http alone does not.
//
// Exact reason phrases. Go's net/http writes only the standard reason phrase
// of a status code. To put an exact phrase such as "400 Invalid Path" on the
// wire, a handler announces the phrase of the status line it is about to
// write (see [WriteStatus]), the header is flushed at once, and the
// connection rewrites that one status line ("HTTP/1.1 " or "HTTP/1.0 ") as it
// passes. The announcement is withdrawn as soon as that flush returns, used
// or not, so it never reaches another answer; net/http's own error answers,
// such as 400 Bad Request for an unparsable request line, keep their phrase.
// Without the wrapper the standard phrase is sent; bodies still carry the
// exact status line.
//
// Half-close. net/http reads one byte in the background while a handler
// runs; on io.EOF it would cancel the request's context, so a client that
// sends its request and then shuts down its write side (shutdown(SHUT_WR))
// would lose its answer. These connections hold such an io.EOF back: the
// one-byte read waits until net/http aborts it when the handler is done (by
// setting a read deadline in the past), the read deadline passes, or the
// connection is closed, and then returns a timeout error, which net/http
// ignores for an aborted read. The next ordinary read returns io.EOF, so the
// connection ends after the answer. The client that half-closes gets its
// full, normal answer, and so do requests it pipelined before the
// half-close. In turn, TCP cannot tell a half-close from a full close until
// the server writes: a client that closes its connection fully ends a
// handler's context only when a write to it fails, as net/http does for
// pipelined requests. A reset connection (an error other than io.EOF) still
// ends it at once. A one-byte read by whoever hijacks the connection after
// the client half-closed waits the same way.
func Listen(ln net.Listener) net.Listener { return &listener{Listener: ln} }

// ConnContext is an http.Server ConnContext function that makes a connection
// accepted by a [Listen] listener reachable from request contexts. It also
// lets the [Router] keep the request context of each request on such a
// connection with the connection, instead of deriving a context and a copy
// of the *http.Request for it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*reasonConn); ok {
		return newConnContext(ctx, rc)
	}
	return ctx
}

type connKey struct{}

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &reasonConn{Conn: c, gone: make(chan struct{})}, nil
}

type reasonConn struct {
	net.Conn
	pending atomic.Pointer[reasonLine]

	// state holds the state of the request being routed (see [Router]).
	state connState

	// showErrors is set while the request being served passes through
	// [ShowErrors].
	showErrors atomic.Bool

	// route is the recorder of the request being served, set by
	// [ServeRecorded]; nil when none.
	route atomic.Pointer[RouteRecorder]

	// local is what the server and middleware keep on the connection
	// (see [ConnLocal]).
	local ConnLocal

	// eof is set once the peer's io.EOF has been seen (and held back);
	// gone is closed then (see peerGone).
	eof     atomic.Bool
	gone    chan struct{}
	goneOne sync.Once

	// deadline is the read deadline last set, as Unix nanoseconds (0 for
	// none), for held reads; held is set once a read has been held, after
	// which setting a deadline wakes it. Until then a deadline takes no lock of
	// the held reads (mu).
	deadline atomic.Int64
	held     atomic.Bool

	// The read deadline reaches Conn lazily: net/http sets it about six
	// times per request, mostly while no read waits (clearing it and
	// setting the idle one at once after each answer, for instance), and
	// each setting costs Conn a timer's update. A deadline set while no
	// read is in progress is kept in want (dirty set) and given to Conn
	// before the next read starts, or at once when a read is in progress,
	// so that reads see exactly the deadlines they would have seen; only
	// the last of several settings between two reads reaches Conn.
	// reading counts the reads in progress on Conn; a read increments it
	// before it looks at dirty, a setting sets dirty before it looks at
	// reading, so one of the two sees the other (the atomics are
	// sequentially consistent). dmu guards want and applied.
	reading atomic.Int32
	dirty   atomic.Bool
	dmu     sync.Mutex
	want    time.Time // the read deadline last set
	applied time.Time // the read deadline Conn has

	// mu guards the fields below, which a held one-byte read waits on.
	mu     sync.Mutex
	cond   *sync.Cond // on mu; created by the first held read
	closed bool
}

// reasonLine is an announced status line: its code and phrase.
type reasonLine struct {
	code   int
	reason string
}

// announce sets the phrase for the next status line with the given code
// and returns the announcement, for [reasonConn.withdraw].
func (c *reasonConn) announce(code int, reason string) *reasonLine {
	rl := &reasonLine{code: code, reason: reason}
	c.pending.Store(rl)
	return rl
}

// withdraw drops the announcement rl if it is still pending.
func (c *reasonConn) withdraw(rl *reasonLine) { c.pending.CompareAndSwap(rl, nil) }

// Read reads from the connection, holding back the peer's io.EOF from
// net/http's one-byte background read (see [Listen]). Reads are told apart
// by size only: net/http's other reads ask for its buffer's free space, which
// is one byte only in the rare case of a request header line filling all
// but one byte of it; if the client's EOF comes just then, that (incomplete)
// request waits for its header read deadline instead of ending at once.
func (c *reasonConn) Read(p []byte) (int, error) {
	if c.eof.Load() {
		if len(p) == 1 {
			return 0, c.hold()
		}
		return 0, io.EOF
	}
	c.reading.Add(1)
	if c.dirty.Load() {
		c.applyDeadline()
	}
	n, err := c.Conn.Read(p)
	c.reading.Add(-1)
	if n == 0 && err == io.EOF && len(p) == 1 {
		c.eof.Store(true)
		if c.gone != nil {
			c.goneOne.Do(func() { close(c.gone) })
		}
		return 0, c.hold()
	}
	return n, err
}

// peerGone returns a channel closed once the peer of r's connection has
// closed its side of it (the io.EOF a [Listen] connection holds back),
// nil for a request that came otherwise. An answer that only writes, such
// as a stream, takes it for the client going away: a client that waits
// for an endless answer does not half-close.
func peerGone(r *http.Request) <-chan struct{} {
	if c, ok := r.Context().Value(connKey{}).(*reasonConn); ok {
		return c.gone
	}
	return nil
}

// hold blocks a one-byte read after the peer's io.EOF until the read
// deadline passes (a deadline in the past is how net/http aborts its
// background read) or the connection is closed. Deadlines set while it
// waits count.
func (c *reasonConn) hold() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
	// Set before the deadline is read: a deadline set from now on wakes
	// this read (setDeadline stores it, then finds held set and takes mu).
	c.held.Store(true)
	for {
		if c.closed {
			return c.opError(net.ErrClosed)
		}
		d := c.deadline.Load()
		if d == 0 {
			c.cond.Wait()
			continue
		}
		wait := time.Until(time.Unix(0, d))
		if wait <= 0 {
			return c.opError(os.ErrDeadlineExceeded)
		}
		t := time.AfterFunc(wait, c.wake)
		c.cond.Wait()
		t.Stop()
	}
}

// wake wakes the reads held by hold to look at the deadline again.
func (c *reasonConn) wake() {
	c.mu.Lock()
	if c.cond != nil {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

func (c *reasonConn) opError(err error) error {
	return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// setDeadline records the read deadline t for held reads and wakes them.
func (c *reasonConn) setDeadline(t time.Time) {
	var d int64 // 0 stands for none
	switch sec := t.Unix(); {
	case t.IsZero():
	case sec <= 0:
		d = 1 // long past, as net/http's aborting deadline
	case sec >= math.MaxInt64/int64(time.Second):
		d = math.MaxInt64 // past what UnixNano holds: never
	default:
		d = t.UnixNano()
	}
	c.deadline.Store(d)
	if !c.held.Load() {
		return
	}
	c.mu.Lock()
	if c.cond != nil {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// SetReadDeadline sets the read deadline, also of a held read. It reaches
// the connection underneath before its next read, or at once when a read is
// in progress (see reasonConn.reading); an error of the connection's own
// SetReadDeadline is returned only then, and a later read returns the
// error of the connection anyway.
func (c *reasonConn) SetReadDeadline(t time.Time) error {
	c.setDeadline(t)
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.want = t
	if t.Equal(c.applied) {
		c.dirty.Store(false)
		return nil
	}
	c.dirty.Store(true)
	if c.reading.Load() == 0 {
		return nil
	}
	c.dirty.Store(false)
	c.applied = t
	return c.Conn.SetReadDeadline(t)
}

// applyDeadline gives the connection underneath the read deadline last
// set, if it does not have it yet.
func (c *reasonConn) applyDeadline() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.dirty.Load() {
		return
	}
	c.dirty.Store(false)
	c.applied = c.want
	_ = c.Conn.SetReadDeadline(c.want)
}

// SetDeadline sets the read and write deadlines, also of a held read.
func (c *reasonConn) SetDeadline(t time.Time) error {
	c.setDeadline(t)
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.want, c.applied = t, t
	c.dirty.Store(false)
	return c.Conn.SetDeadline(t)
}

// Close closes the connection and ends a held read.
func (c *reasonConn) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.cond != nil {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// NetConn returns the connection c wraps, such as a *tls.Conn when the
// listener given to [Listen] accepts TLS connections (net/http fills
// Request.TLS only for a *tls.Conn it accepts itself, so a server that wraps
// TLS connections finds their state through it).
func (c *reasonConn) NetConn() net.Conn {
	c.applyDeadline()
	return c.Conn
}

// Hijacked returns the connection under c when c is a connection of a
// [Listen] listener, for a handler that hijacked it from net/http and keeps
// it: what the wrapper adds (status lines with reasons, the peer's io.EOF
// held back from net/http's background read, the [Router]'s request slot
// and its scratch space) serves net/http only, and a hijacker that kept the
// wrapper would keep all of it for as long as the connection lasts (an idle
// WebSocket: 0.6 KiB). Any other c is returned as it is. Once hijacked, c
// itself must not be used any more.
func Hijacked(c net.Conn) net.Conn {
	if rc, ok := c.(*reasonConn); ok {
		rc.applyDeadline() // the read deadline last set, as net/http left it
		return rc.Conn
	}
	return c
}

// statusPrefix reports whether p starts with "HTTP/1.1 " or "HTTP/1.0 ".
func statusPrefix(p []byte) bool {
	return len(p) >= 9 && string(p[:7]) == "HTTP/1." && (p[7] == '1' || p[7] == '0') && p[8] == ' '
}

func (c *reasonConn) Write(p []byte) (int, error) {
	pd := c.pending.Load()
	if pd == nil || !statusPrefix(p) {
		return c.Conn.Write(p)
	}
	// "HTTP/1.x NNN phrase\r\n": an interim 100 Continue passes unchanged.
	rest := p[9:]
	if len(rest) < 4 || rest[3] != ' ' {
		return c.Conn.Write(p)
	}
	got, err := strconv.Atoi(string(rest[:3]))
	if err != nil || got != pd.code {
		return c.Conn.Write(p)
	}
	eol := bytes.Index(rest, []byte("\r\n"))
	if eol < 0 {
		return c.Conn.Write(p)
	}
	c.pending.CompareAndSwap(pd, nil)
	line := make([]byte, 0, len(p)+len(pd.reason))
	line = append(line, p[:9]...)
	line = append(line, rest[:4]...)
	line = append(line, pd.reason...)
	line = append(line, rest[eol:]...)
	if _, err := c.Conn.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps the connection's own ReadFrom (sendfile for downloads):
// net/http calls it only after the response header has been written.
func (c *reasonConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok && c.pending.Load() == nil {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c}, r)
}

// CloseWrite half-closes the connection when it can, as net/http does with
// a *net.TCPConn before closing it.
func (c *reasonConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writerOnly hides every method but Write, so io.Copy does not loop back
// into ReadFrom.
type writerOnly struct{ io.Writer }
