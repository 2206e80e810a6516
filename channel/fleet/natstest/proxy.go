package natstest

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP forwarder on a loopback port: each connection it
// accepts is passed to its target as the target is then. A test cuts the
// link it stands for with [Proxy.Drop] (open connections closed, new ones
// reset at once, as a lost route refuses them) or [Proxy.Stall] (open and
// new connections stay open and carry nothing, neither bytes nor their
// end, as a network that loses every packet), and ends either with
// [Proxy.Heal]: what a stall held back then goes through.
type Proxy struct {
	ln   net.Listener
	addr string
	wg   sync.WaitGroup

	mu      sync.Mutex
	target  string
	dropped bool
	stalled chan struct{} // closed by Heal; nil while bytes flow
	links   map[*link]struct{}
	closed  bool
}

// link is one forwarded connection: the accepted one and the one to the
// target.
type link struct {
	down, up net.Conn
	once     sync.Once
	done     chan struct{} // closed by close
}

// close closes both connections, once.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.down.Close()
		l.up.Close()
	})
}

// proxyDial bounds the connection to the target.
const proxyDial = 5 * time.Second

// NewProxy starts a proxy to target on a port of 127.0.0.1 that the
// system chooses; the caller closes it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, addr: ln.Addr().String(), target: target, links: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the address (host:port) the proxy listens on: the same
// until it is closed.
func (p *Proxy) Addr() string { return p.addr }

// Target returns the address new connections are passed to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// Conns returns how many connections the proxy forwards now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// SetTarget passes the connections accepted from now on to target; the
// open ones stay where they are.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Drop closes every open connection and resets every new one until Heal.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.dropped = true
	links := p.takeLinks()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Stall keeps every open and new connection open and passes nothing
// through them, in either direction, until Heal or Drop.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = false
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Heal ends a Drop or a Stall: new connections are passed on again and
// stalled ones carry what they held back.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = false
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// Close stops the proxy: it listens no more and its connections are
// closed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := p.takeLinks()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
	return err
}

// takeLinks empties the set of open links and returns them; p.mu is held.
func (p *Proxy) takeLinks() []*link {
	var out []*link
	for l := range p.links {
		out = append(out, l)
		delete(p.links, l)
	}
	return out
}

// accept serves the listener until it is closed.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient error (out of descriptors)
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// reset closes c with a TCP reset, as a refused connection ends.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// serve connects c to the target and forwards both ways.
func (p *Proxy) serve(c net.Conn) {
	p.mu.Lock()
	dropped, closed, target := p.dropped, p.closed, p.target
	p.mu.Unlock()
	if dropped || closed || target == "" {
		reset(c)
		return
	}
	up, err := net.DialTimeout("tcp", target, proxyDial)
	if err != nil {
		reset(c) // the target refuses: so does the proxy
		return
	}
	l := &link{down: c, up: up, done: make(chan struct{})}
	p.mu.Lock()
	if p.dropped || p.closed {
		p.mu.Unlock()
		reset(c)
		up.Close()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(l, up, c) })
	wg.Go(func() { p.pump(l, c, up) })
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pump copies src to dst, holding each read back while the proxy is
// stalled; the end of either direction closes the link.
func (p *Proxy) pump(l *link, dst, src net.Conn) {
	defer l.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		// Bytes and the end of the stream alike wait for the stall's end.
		if !p.pass(l) {
			return
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits while the proxy is stalled; it reports false when the link
// was closed meanwhile.
func (p *Proxy) pass(l *link) bool {
	for {
		p.mu.Lock()
		stalled := p.stalled
		p.mu.Unlock()
		if stalled == nil {
			select {
			case <-l.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-stalled:
		case <-l.done:
			return false
		}
	}
}
