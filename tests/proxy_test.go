package tests

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards TCP connections to a target address (or, when it
// refuses them, to the first of its fallbacks that accepts, as a load
// balancer would). While it is down it accepts and closes every new
// connection at once, as a lost network would refuse it; cut ends the
// open ones.
type tcpProxy struct {
	Addr string
	l    net.Listener

	mu        sync.Mutex
	target    string
	fallbacks []string
	down      bool
	holding   chan struct{} // closed when bytes were held; nil when not holding
	conns     map[net.Conn]struct{}
}

// newProxy starts a proxy to target on a loopback port; it ends with t.
func newProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{Addr: l.Addr().String(), target: target, l: l, conns: make(map[net.Conn]struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		p.cut()
		wg.Wait()
	})
	return p
}

func (p *tcpProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	targets := append([]string{p.target}, p.fallbacks...)
	p.mu.Unlock()
	var s net.Conn
	var err error
	for _, target := range targets {
		if s, err = net.Dial("tcp", target); err == nil {
			break
		}
	}
	if err != nil {
		c.Close()
		return
	}
	// Down may have come (and cut the connections it found) while the
	// target was dialed: this one is cut as well.
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.forward(s, c); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// forward copies what the client sends to the server, except while the
// proxy holds it back.
func (p *tcpProxy) forward(s, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			h := p.holding
			if h != nil {
				select {
				case <-h:
				default:
					close(h)
				}
			}
			p.mu.Unlock()
			if h == nil {
				if _, err := s.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// hold keeps back what clients send from now on, until cut; the channel is
// closed once something was held.
func (p *tcpProxy) hold() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = make(chan struct{})
	return p.holding
}

// to sends new connections to target from now on.
func (p *tcpProxy) to(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// orElse sends new connections that the target refuses to the first of
// addrs that accepts them.
func (p *tcpProxy) orElse(addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fallbacks = addrs
}

// setDown refuses new connections (true) or lets them through (false).
func (p *tcpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// cut ends every open connection, and a hold.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = nil
	for c := range p.conns {
		c.Close()
	}
}
