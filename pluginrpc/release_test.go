package pluginrpc

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// The ends of a client that crosses the boundary as a race: an answer or
// a call on its way when the client goes away. These tests play the other
// process's part with fakes, to put each race in a fixed order.

// recordedSource is an event source that counts its Close calls.
type recordedSource struct{ closed atomic.Int32 }

func (s *recordedSource) Next(ctx context.Context) (core.Event, error) {
	<-ctx.Done()
	return core.Event{}, ctx.Err()
}

func (s *recordedSource) Close() error {
	s.closed.Add(1)
	return nil
}

// fakeExchange is the host's end of one Exchange stream: it sends reqs,
// then ends the stream with end.
type fakeExchange struct {
	grpc.ServerStream
	reqs []*pluginv3.HandleRequest
	end  error
	sent int
}

func (f *fakeExchange) Context() context.Context { return context.Background() }

func (f *fakeExchange) Recv() (*pluginv3.HandleRequest, error) {
	if len(f.reqs) == 0 {
		return nil, f.end
	}
	m := f.reqs[0]
	f.reqs = f.reqs[1:]
	return m, nil
}

func (f *fakeExchange) Send(*pluginv3.HandleResponse) error {
	f.sent++
	return nil
}

// TestExchangeReleasesDroppedAnswer: a streamed answer sent on an Exchange
// stream that the host then cancels (it dropped the answer: its request's
// context ended as the answer arrived) is closed at once; one the host
// showed it read (by its next request, or by ending the stream cleanly)
// is left to the host.
func TestExchangeReleasesDroppedAnswer(t *testing.T) {
	req := &pluginv3.HandleRequest{Route: 0, Request: encodeRequest(&core.Request{Method: "GET", Path: "/watch", Header: http.Header{}})}
	for _, tc := range []struct {
		name   string
		reqs   int
		end    error
		closed []int32 // per answer, in order
	}{
		{"cancelled", 1, status.Error(codes.Canceled, "context canceled"), []int32{1}},
		{"read, then cancelled", 2, status.Error(codes.Canceled, "context canceled"), []int32{0, 1}},
		{"read, then ended", 2, io.EOF, []int32{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(nil, nil)
			var sources []*recordedSource
			s.handlers = []core.Handler{core.HandlerFunc(func(context.Context, *core.Request) (*core.Response, error) {
				src := &recordedSource{}
				sources = append(sources, src)
				return &core.Response{Stream: src}, nil
			})}
			f := &fakeExchange{end: tc.end}
			for range tc.reqs {
				f.reqs = append(f.reqs, req)
			}
			_ = s.Exchange(f)
			if f.sent != tc.reqs {
				t.Fatalf("%d answers sent, want %d", f.sent, tc.reqs)
			}
			for i, want := range tc.closed {
				if got := sources[i].closed.Load(); got != want {
					t.Errorf("answer %d: source closed %d times, want %d", i, got, want)
				}
			}
			s.shutdown()
		})
	}
}

// fakeEventsRPC is the plugin as the host's remoteEvents calls it: its
// Events call yields msgs and then fails as cancelled; CloseEvents is
// recorded.
type fakeEventsRPC struct {
	pluginv3.PluginClient
	msgs   []*pluginv3.EventMessage
	closed []uint64
}

func (f *fakeEventsRPC) Events(context.Context, *pluginv3.EventsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[pluginv3.EventMessage], error) {
	return &fakeEventsStream{msgs: f.msgs}, nil
}

func (f *fakeEventsRPC) CloseEvents(_ context.Context, in *pluginv3.CloseEventsRequest, _ ...grpc.CallOption) (*pluginv3.CloseEventsResponse, error) {
	f.closed = append(f.closed, in.GetHandle())
	return &pluginv3.CloseEventsResponse{}, nil
}

type fakeEventsStream struct {
	grpc.ClientStream
	msgs []*pluginv3.EventMessage
}

func (s *fakeEventsStream) Recv() (*pluginv3.EventMessage, error) {
	if len(s.msgs) == 0 {
		return nil, status.Error(codes.Canceled, "context canceled")
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// TestEventsCloseReleases: a streamed answer whose Events call ended
// before anything came back (cancelled as it started: it may never have
// reached the plugin) is released by its handle on Close; one the plugin
// answered is not, since the plugin took it and closes it itself.
func TestEventsCloseReleases(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []*pluginv3.EventMessage
		want int
	}{
		{"nothing came", nil, 1},
		{"an event came", []*pluginv3.EventMessage{{Data: []byte(`{}`)}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rpc := &fakeEventsRPC{msgs: tc.msgs}
			e := &remoteEvents{rpc: rpc, handle: 7}
			ctx, cancel := context.WithCancel(t.Context())
			for {
				if _, err := e.Next(ctx); err != nil {
					break
				}
				cancel()
			}
			cancel()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if len(rpc.closed) != tc.want || tc.want == 1 && rpc.closed[0] != 7 {
				t.Errorf("CloseEvents calls %v, want %d for handle 7", rpc.closed, tc.want)
			}
		})
	}
}
