package natstest

import "strconv"

// routeState is how a server is cut off from the others.
type routeState int

const (
	routeOpen  routeState = iota // its routes carry
	routeStall                   // its routes stay open and carry nothing
	routeDrop                    // its routes closed, new ones refused
)

// startRouteProxies starts the proxy of every ordered pair of servers,
// each to the route port of its second server.
func (p *Procs) startRouteProxies(n int) error {
	p.routes = make([][]*Proxy, n)
	p.cut = make([]routeState, n)
	for i := range n {
		p.routes[i] = make([]*Proxy, n)
		for j := range n {
			if i == j {
				continue
			}
			r, err := NewProxy("127.0.0.1:" + strconv.Itoa(p.cport[j]))
			if err != nil {
				return err
			}
			p.routes[i][j] = r
		}
	}
	return nil
}

// Cut cuts server i off from the others while it runs: its route
// connections, whichever side opened them, are closed and new ones are
// refused until [Procs.Heal]. Its clients still reach it. The routes
// must be proxied ([ProcsConfig.ProxiedRoutes]); otherwise Cut panics.
func (p *Procs) Cut(i int) { p.setCut(i, routeDrop) }

// Stall cuts server i off from the others while it runs, the other way:
// its route connections stay open, and so do new ones, but nothing
// passes through them until [Procs.Heal], which lets what they held
// through. The routes must be proxied ([ProcsConfig.ProxiedRoutes]);
// otherwise Stall panics.
func (p *Procs) Stall(i int) { p.setCut(i, routeStall) }

// Heal ends a Cut or Stall of server i: its routes carry again (but not
// those to a server still cut off).
func (p *Procs) Heal(i int) { p.setCut(i, routeOpen) }

// RouteConns returns how many route connections of server i pass
// through the proxies now, whichever side opened them: as many as the
// server's monitoring endpoint /routez counts when every route passes
// through them. The routes must be proxied
// ([ProcsConfig.ProxiedRoutes]); otherwise RouteConns panics.
func (p *Procs) RouteConns(i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		panic("natstest: RouteConns needs ProcsConfig.ProxiedRoutes")
	}
	n := 0
	for j := range p.routes {
		if j != i {
			n += p.routes[i][j].Conns() + p.routes[j][i].Conns()
		}
	}
	return n
}

// setCut sets how server i is cut off and applies it to every route: a
// route between two servers is as cut as the more cut of them.
func (p *Procs) setCut(i int, s routeState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		panic("natstest: cutting a server off needs ProcsConfig.ProxiedRoutes")
	}
	p.cut[i] = s
	for a, row := range p.routes {
		for b, r := range row {
			if r == nil {
				continue
			}
			switch max(p.cut[a], p.cut[b]) {
			case routeDrop:
				r.Drop()
			case routeStall:
				r.Stall()
			default:
				r.Heal()
			}
		}
	}
}
