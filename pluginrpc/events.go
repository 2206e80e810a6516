package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Streamed answers (core.Response.Stream) across the process boundary.
//
// The plugin keeps the source under a handle with the request it answers
// and whether the request asked for Server-Sent Events; the host reads it
// with the server-streaming call Events. The plugin renders each event's
// value with core.RenderEvent, exactly as the host would in process, and
// sends the bytes; the host passes them on as core.EventData, which its
// stream writer writes unchanged: the framing (SSE or NDJSON lines,
// keep-alives, flushing) is the host's, so a stream reaches the wire byte
// for byte as it does compiled in. gRPC's flow control carries a slow
// client's back-pressure to the plugin's source: nothing is dropped.

// closeEventsTimeout bounds the CloseEvents call of a stream never read.
const closeEventsTimeout = 5 * time.Second

// remoteEvents is an isolated plugin's streamed answer as the host reads
// it. The first Next opens the Events call with its context; Close cancels
// the call (the plugin's source then sees its context end and is closed),
// and releases the stream by its handle (CloseEvents) unless the call
// showed that the plugin took it: a call cancelled as it starts (the client
// went away at once) may end before its request reaches the plugin, which
// would otherwise keep the source, and what the source holds (a tree
// client, its frames), until ContentIdle.
type remoteEvents struct {
	rpc     pluginv3.PluginClient
	handle  uint64
	stream  pluginv3.Plugin_EventsClient
	cancel  context.CancelFunc
	taken   bool       // an event or the end came: the plugin took the stream
	crossed *crossings // counts the events that came (splice.go)
}

// Next returns the next event; io.EOF at the end of the stream,
// ErrUnavailable when the plugin process died, ctx's error when ctx ended.
func (e *remoteEvents) Next(ctx context.Context) (core.Event, error) {
	if e.stream == nil {
		cctx, cancel := context.WithCancel(ctx)
		st, err := e.rpc.Events(cctx, &pluginv3.EventsRequest{Handle: e.handle})
		if err != nil {
			cancel()
			return core.Event{}, eventsError(ctx, err)
		}
		e.stream, e.cancel = st, cancel
	}
	m, err := e.stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			e.taken = true
			return core.Event{}, io.EOF
		}
		return core.Event{}, eventsError(ctx, err)
	}
	e.taken = true
	e.crossed.add()
	return core.Event{ID: string(m.GetId()), Name: string(m.GetName()), Value: core.EventData(m.GetData())}, nil
}

func eventsError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.Aborted:
		return ErrUnavailable
	}
	return fmt.Errorf("pluginrpc: events: %s", status.Convert(err).Message())
}

// Close ends the Events call, and releases the stream unless the plugin
// took it.
func (e *remoteEvents) Close() error {
	if e.cancel != nil {
		e.cancel()
	}
	if e.taken {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeEventsTimeout)
	defer cancel()
	_, err := e.rpc.CloseEvents(ctx, &pluginv3.CloseEventsRequest{Handle: e.handle})
	if err != nil {
		return fmt.Errorf("pluginrpc: close events: %s", status.Convert(err).Message())
	}
	return nil
}

// eventTable holds the plugin's open streamed answers by handle, until the
// host reads or releases them (or after idle without either).
type eventTable struct {
	idle time.Duration

	mu   sync.Mutex
	next uint64
	m    map[uint64]*openEvents
}

type openEvents struct {
	src   core.EventSource
	req   *core.Request
	sse   bool
	timer *time.Timer
}

func newEventTable(idle time.Duration) *eventTable {
	return &eventTable{idle: idle, m: make(map[uint64]*openEvents)}
}

// open keeps src, the streamed answer to req, and returns its handle
// (never 0).
func (t *eventTable) open(src core.EventSource, req *core.Request, sse bool) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	h := t.next
	t.m[h] = &openEvents{src: src, req: req, sse: sse, timer: time.AfterFunc(t.idle, func() { t.close(h) })}
	return h
}

// take removes stream h from the table for reading; nil when there is none.
func (t *eventTable) take(h uint64) *openEvents {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[h]
	if e != nil {
		delete(t.m, h)
		e.timer.Stop()
	}
	return e
}

// close closes stream h unless it is being read.
func (t *eventTable) close(h uint64) {
	if e := t.take(h); e != nil {
		_ = e.src.Close()
	}
}

func (t *eventTable) closeAll() {
	t.mu.Lock()
	m := t.m
	t.m = make(map[uint64]*openEvents)
	t.mu.Unlock()
	for _, e := range m {
		e.timer.Stop()
		_ = e.src.Close()
	}
}

// Events streams the events of an open streamed answer, rendered, until
// the source ends or the host cancels the call; then closes the source.
func (s *server) Events(req *pluginv3.EventsRequest, stream pluginv3.Plugin_EventsServer) error {
	e := s.streams.take(req.GetHandle())
	if e == nil {
		return status.Errorf(codes.NotFound, "pluginrpc: no open stream %d", req.GetHandle())
	}
	defer e.src.Close()
	ctx := stream.Context()
	for {
		ev, err := e.src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return status.FromContextError(ctxErr).Err()
			}
			return status.Errorf(codes.Internal, "pluginrpc: stream: %v", err)
		}
		m := &pluginv3.EventMessage{Id: wire(ev.ID), Name: wire(ev.Name), Data: core.RenderEvent(e.req, e.sse, ev.Value)}
		if err := stream.Send(m); err != nil {
			return err
		}
	}
}

// CloseEvents releases a streamed answer the host will not read.
func (s *server) CloseEvents(_ context.Context, req *pluginv3.CloseEventsRequest) (*pluginv3.CloseEventsResponse, error) {
	s.streams.close(req.GetHandle())
	return &pluginv3.CloseEventsResponse{}, nil
}

var _ core.EventSource = (*remoteEvents)(nil)
