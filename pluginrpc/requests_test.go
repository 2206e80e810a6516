package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"github.com/reso-project/reso/internal/poll"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// waitingRequests returns how many requests wait for an answer on the
// Requests call of c's current process, and that call (nil when none is
// open).
func waitingRequests(c *Client) (int, *requestCall) {
	cn := c.cur.Load()
	if cn == nil {
		return 0, nil
	}
	cn.requests.mu.Lock()
	call := cn.requests.cur
	cn.requests.mu.Unlock()
	if call == nil {
		return 0, nil
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	return len(call.waiting), call
}

// startWaits starts n requests to GET /wait (which answers when its
// context ends) with ctx; their errors come on the returned channel.
func startWaits(t *testing.T, c *Client, ctx context.Context, n int) <-chan error {
	h := handlerOf(t, c, "GET /wait")
	errc := make(chan error, n)
	for range n {
		go func() {
			_, err := h.Handle(ctx, &core.Request{Method: "GET", Path: "/wait", Header: http.Header{}})
			errc <- err
		}()
	}
	return errc
}

// TestRequestsShareOneCall: requests in flight at once to a plugin process
// all ride its one Requests call, each cancelled by its id: the handlers'
// contexts end, the host waits for none of them, and the call serves the
// next requests.
func TestRequestsShareOneCall(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	const n = 20
	ctx, cancel := context.WithCancel(t.Context())
	errc := startWaits(t, c, ctx, n)
	var first *requestCall
	poll.Until(t, 10*time.Second, "20 requests waiting on one call", func() bool {
		w, call := waitingRequests(c)
		first = call
		return w == n
	})
	cancel()
	for range n {
		if err := <-errc; err != context.Canceled {
			t.Errorf("cancelled request: %v, want context.Canceled", err)
		}
	}
	if w, call := waitingRequests(c); w != 0 || call != first {
		t.Errorf("after the cancels: %d waiting, same call %v", w, call == first)
	}
	// The plugin saw its handlers' contexts end (GET /wait sets cancelled).
	get := handlerOf(t, c, "GET /setting/(?P<name>\\w+)")
	poll.Until(t, 10*time.Second, "the handlers cancelled in the plugin", func() bool {
		resp, err := get.Handle(t.Context(), &core.Request{Method: "GET", Path: "/setting/cancelled", Vars: map[string]string{"name": "cancelled"}, Header: http.Header{}})
		return err == nil && string(resp.Body) == "yes"
	})
	users := handlerOf(t, c, `GET /users(?:/|$|\?)`)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := users.Handle(t.Context(), &core.Request{Method: "GET", Path: "/0", Consumed: "/users", Header: http.Header{}})
			if err != nil || len(resp.Body) == 0 {
				t.Errorf("GET /users/0: %v", err)
			}
		})
	}
	wg.Wait()
	if _, call := waitingRequests(c); call != first {
		t.Error("the requests after the cancels opened another call")
	}
}

// TestRequestsKilled: the requests waiting on the call when the plugin
// process is killed fail with ErrUnavailable (503 Plugin Unavailable),
// and the restarted process serves requests on a call of its own.
func TestRequestsKilled(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	const n = 5
	errc := startWaits(t, c, t.Context(), n)
	poll.Until(t, 10*time.Second, "5 requests waiting", func() bool {
		w, _ := waitingRequests(c)
		return w == n
	})
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errc; !errors.Is(err, ErrUnavailable) {
			t.Errorf("request in flight on a killed plugin: %v, want ErrUnavailable", err)
		}
	}
	pid := handlerOf(t, c, "GET /pid")
	poll.Until(t, 15*time.Second, "the restarted plugin", func() bool {
		_, err := pid.Handle(t.Context(), &core.Request{Method: "GET", Path: "", Header: http.Header{}})
		return err == nil
	})
}

// exchangeOnly is a plugin's server of an older build of protocol
// version 3, which has no Requests.
type exchangeOnly struct{ *server }

func (exchangeOnly) Requests(pluginv3.Plugin_RequestsServer) error {
	return status.Error(codes.Unimplemented, "method Requests not implemented")
}

// exchangeOnlyPlugin serves exchangeOnly in the child "exchange".
type exchangeOnlyPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl plugins.Plugin
}

func (p *exchangeOnlyPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	pluginv3.RegisterPluginServer(s, exchangeOnly{newServer(p.impl, broker)})
	return nil
}

func (p *exchangeOnlyPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("host side only in grpcPlugin")
}

// serveExchangeOnly serves p as a plugin without Requests would.
func serveExchangeOnly(p plugins.Plugin) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{PluginName: &exchangeOnlyPlugin{impl: p}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// TestRequestsFallback: a plugin without Requests (Unimplemented) gets
// its requests on Exchange streams, answers and cancellations alike.
func TestRequestsFallback(t *testing.T) {
	c := load(t, Config{Name: "old", Cmd: childCmd("exchange")})
	users := handlerOf(t, c, `GET /users(?:/|$|\?)`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := users.Handle(t.Context(), &core.Request{Method: "GET", Path: "/0", Consumed: "/users", Header: http.Header{}})
			if err != nil || len(resp.Body) == 0 {
				t.Errorf("GET /users/0 on Exchange: %v", err)
			}
		})
	}
	wg.Wait()
	cn := c.cur.Load()
	cn.requests.mu.Lock()
	unsupported := cn.requests.unsupported
	cn.requests.mu.Unlock()
	if !unsupported {
		t.Error("the host did not note that the plugin has no Requests")
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := startWaits(t, c, ctx, 1)
	time.Sleep(50 * time.Millisecond) // most often in the plugin by now; either way the answer is the same
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("cancelled request on Exchange: %v, want context.Canceled", err)
	}
}

// fakeRequests is the host's end of one Requests call: next gives what
// each Recv returns, in order; the answers sent are kept.
type fakeRequests struct {
	grpc.ServerStream
	next func() (*pluginv3.RequestBatch, error)
	mu   sync.Mutex
	sent []*pluginv3.TaggedAnswer
}

func (f *fakeRequests) Context() context.Context { return context.Background() }

func (f *fakeRequests) Recv() (*pluginv3.RequestBatch, error) { return f.next() }

func (f *fakeRequests) Send(b *pluginv3.AnswerBatch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, b.GetAnswers()...)
	return nil
}

// TestRequestsReleaseCancelled: a request the host cancelled gets no
// answer, and the streamed answer its handler still returned is closed at
// once; the request beside it is answered, and its answer left to the
// host.
func TestRequestsReleaseCancelled(t *testing.T) {
	s := newServer(nil, nil)
	defer s.shutdown()
	started := make(chan struct{}, 2)
	var mu sync.Mutex
	sources := map[string]*recordedSource{}
	s.handlers = []core.Handler{core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
		src := &recordedSource{}
		mu.Lock()
		sources[req.Path] = src
		mu.Unlock()
		started <- struct{}{}
		if req.Path == "/cancelled" {
			<-ctx.Done()
		}
		return &core.Response{Stream: src}, nil
	})}
	req := func(id uint64, path string) *pluginv3.TaggedRequest {
		return &pluginv3.TaggedRequest{Id: id, Request: encodeRequest(&core.Request{Method: "GET", Path: path, Header: http.Header{}})}
	}
	step := 0
	f := &fakeRequests{next: func() (*pluginv3.RequestBatch, error) {
		step++
		switch step {
		case 1:
			return &pluginv3.RequestBatch{Requests: []*pluginv3.TaggedRequest{req(1, "/cancelled"), req(2, "/answered")}}, nil
		case 2:
			<-started
			<-started
			return &pluginv3.RequestBatch{Requests: []*pluginv3.TaggedRequest{{Id: 1, Cancel: true}}}, nil
		}
		return nil, io.EOF
	}}
	if err := s.Requests(f); err != nil {
		t.Fatal(err)
	}
	if len(f.sent) != 1 || f.sent[0].GetId() != 2 {
		t.Fatalf("answers sent %v, want the one of request 2", f.sent)
	}
	if n := sources["/cancelled"].closed.Load(); n != 1 {
		t.Errorf("the cancelled request's stream closed %d times, want 1", n)
	}
	if n := sources["/answered"].closed.Load(); n != 0 {
		t.Errorf("the answered request's stream closed %d times, want 0 (the host has it)", n)
	}
}

// releaseRPC is the plugin as the host's release calls it: the handles
// closed come on closed.
type releaseRPC struct {
	pluginv3.PluginClient
	closed chan string
}

func (r *releaseRPC) CloseEvents(_ context.Context, in *pluginv3.CloseEventsRequest, _ ...grpc.CallOption) (*pluginv3.CloseEventsResponse, error) {
	r.closed <- fmt.Sprint("events ", in.GetHandle())
	return &pluginv3.CloseEventsResponse{}, nil
}

func (r *releaseRPC) CloseContent(_ context.Context, in *pluginv3.CloseContentRequest, _ ...grpc.CallOption) (*pluginv3.CloseContentResponse, error) {
	r.closed <- fmt.Sprint("content ", in.GetHandle())
	return &pluginv3.CloseContentResponse{}, nil
}

// fakeAnswers is the plugin's end of a Requests call as the host reads
// it: batches, then io.EOF.
type fakeAnswers struct {
	grpc.ClientStream
	batches []*pluginv3.AnswerBatch
}

func (f *fakeAnswers) Send(*pluginv3.RequestBatch) error { return nil }

func (f *fakeAnswers) Recv() (*pluginv3.AnswerBatch, error) {
	if len(f.batches) == 0 {
		return nil, io.EOF
	}
	b := f.batches[0]
	f.batches = f.batches[1:]
	return b, nil
}

// TestRequestsReleaseLateAnswer: an answer that comes for a request the
// host no longer waits for (it crossed the cancel) has what it holds open
// closed by the host; the answer of a waiting request goes to it, and the
// requests still waiting when the plugin ends the call fail as
// unavailable (503), as when its process dies.
func TestRequestsReleaseLateAnswer(t *testing.T) {
	rpc := &releaseRPC{closed: make(chan string, 2)}
	x := newRequestMux(t.Context(), rpc)
	late := &pluginv3.TaggedAnswer{Id: 9, Response: &pluginv3.Response{Stream: 7, Content: &pluginv3.Content{Handle: 8}}}
	read := &pluginv3.TaggedAnswer{Id: 1, Response: &pluginv3.Response{Stream: 5}}
	c := &requestCall{mux: x, cancel: func() {}, waiting: map[uint64]*waiter{}}
	c.stream = &fakeAnswers{batches: []*pluginv3.AnswerBatch{{Answers: []*pluginv3.TaggedAnswer{late, read}}}}
	answered, left := &waiter{ch: make(chan *pluginv3.TaggedAnswer, 1)}, &waiter{ch: make(chan *pluginv3.TaggedAnswer, 1)}
	c.waiting[1], c.waiting[2] = answered, left
	c.receive()
	if a := <-answered.ch; a != read {
		t.Errorf("request 1 got %v, want its answer", a)
	}
	if a := <-left.ch; a != nil || status.Code(c.failure()) != codes.Unavailable {
		t.Errorf("request 2 got %v, call's error %v; want nil and Unavailable", a, c.failure())
	}
	got := []string{<-rpc.closed, <-rpc.closed}
	slices.Sort(got)
	if want := []string{"content 8", "events 7"}; !slices.Equal(got, want) {
		t.Errorf("released %v, want %v", got, want)
	}
}
