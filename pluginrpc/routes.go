package pluginrpc

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// The route list (Plugin.Routes): the host serves its services to a
// plugin process and asks it for its routes, once per process; the plugin
// process dials the host's services and calls the plugin's Routes.

// bind serves the host's services to process cn and asks it for its routes.
func (c *Client) bind(ctx context.Context, cn *conn, host plugins.Services) ([]*pluginv3.Route, error) {
	id := cn.broker.NextId()
	cn.sessions.crossed = &c.crossed
	hs := &hostServer{host: host, bodies: &c.bodies, sessions: cn.sessions, crossed: &c.crossed, requests: cn.requests, watch: c.cfg.Watch}
	go cn.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		pluginv3.RegisterHostServer(s, hs)
		return s
	})
	resp, err := cn.rpc.Routes(ctx, &pluginv3.RoutesRequest{HostBrokerId: id, Capabilities: capabilities(host, c.cfg.Watch != nil, c.cfg.Door != nil)})
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: routes: %s", c.cfg.Name, status.Convert(err).Message())
	}
	if e := resp.GetError(); e != nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: routes: %w", c.cfg.Name, decodeError(e))
	}
	return resp.GetRoutes(), nil
}

func sameRoutes(a, b []*pluginv3.Route) bool {
	return slices.EqualFunc(a, b, func(x, y *pluginv3.Route) bool { return proto.Equal(x, y) })
}

// Routes asks the plugin for its routes (once: later calls return the same
// routes) and serves host to it. The handlers forward to the plugin process.
func (c *Client) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built != nil {
		return slices.Clone(c.built), nil
	}
	cn := c.cur.Load()
	if cn == nil {
		return nil, fmt.Errorf("pluginrpc: plugin %q: %w", c.cfg.Name, ErrUnavailable)
	}
	rs, err := c.bind(ctx, cn, host)
	if err != nil {
		return nil, err
	}
	c.host, c.routes = &host, rs
	built := make([]plugins.Route, len(rs))
	for i, r := range rs {
		built[i] = decodeRoute(r)
		if r.GetHasHandler() {
			built[i].Handler = &remoteHandler{c: c, route: uint32(i)}
		}
		if r.GetHasSession() {
			built[i].Session = c.sessionHandler(host, r, uint32(i))
		}
	}
	c.built = built
	return slices.Clone(built), nil
}

// Routes dials the host's services and asks the plugin for its routes.
func (s *server) Routes(ctx context.Context, req *pluginv3.RoutesRequest) (*pluginv3.RoutesResponse, error) {
	if s.broker == nil {
		return nil, status.Error(codes.FailedPrecondition, "pluginrpc: no broker to reach the host")
	}
	cc, err := s.broker.Dial(req.GetHostBrokerId())
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "pluginrpc: dial the host: %v", err)
	}
	return s.routes(ctx, cc, stringList(req.GetCapabilities()))
}

// routes asks the plugin for its routes, with the host reached through cc.
func (s *server) routes(ctx context.Context, cc *grpc.ClientConn, capabilities []string) (*pluginv3.RoutesResponse, error) {
	host := &remoteHost{client: pluginv3.NewHostClient(cc)}
	rs, err := s.impl.Routes(ctx, host.view(capabilities))
	if err != nil {
		cc.Close()
		return &pluginv3.RoutesResponse{Error: encodeError(err)}, nil
	}
	handlers := make([]core.Handler, len(rs))
	sessions := make([]core.SessionHandler, len(rs))
	out := &pluginv3.RoutesResponse{Routes: make([]*pluginv3.Route, len(rs))}
	for i, r := range rs {
		handlers[i], sessions[i] = r.Handler, r.Session
		out.Routes[i] = encodeRoute(r)
		out.Routes[i].Door = host.door(r.Session)
	}
	s.mu.Lock()
	old := s.hostConn
	s.handlers, s.sessions, s.host, s.hostConn = handlers, sessions, host, cc
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return out, nil
}
