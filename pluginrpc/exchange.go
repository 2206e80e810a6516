package pluginrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// The Exchange streams that carry the requests of a plugin without Requests
// (an older build of protocol version 3): the host keeps a pool of
// idle streams per plugin process; the plugin answers the requests of one
// stream one after the other.

// maxIdleStreams bounds the idle Exchange streams kept per plugin process.
const maxIdleStreams = 128

// streamPool holds the idle Exchange streams of one plugin process. A
// request takes one (or opens one), sends itself, waits for the answer on
// the same stream and puts it back: one message each way, and the answer
// wakes the waiting handler directly.
type streamPool struct {
	ctx context.Context // the process's life
	rpc pluginv3.PluginClient

	mu   sync.Mutex
	idle []*exchangeStream
}

type exchangeStream struct {
	stream pluginv3.Plugin_ExchangeClient
	cancel context.CancelFunc
}

func newStreamPool(ctx context.Context, rpc pluginv3.PluginClient) *streamPool {
	return &streamPool{ctx: ctx, rpc: rpc}
}

// call sends m on an idle stream and returns the answer. When ctx ends
// first, the stream is cancelled (which cancels the handler's context in
// the plugin) and dropped.
func (p *streamPool) call(ctx context.Context, m *pluginv3.HandleRequest) (*pluginv3.HandleResponse, error) {
	s, err := p.get()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, s.cancel)
	err = s.stream.Send(m)
	var resp *pluginv3.HandleResponse
	if err == nil {
		resp, err = s.stream.Recv()
	} else {
		// Send reports io.EOF for a stream that ended; Recv has the reason.
		_, err = s.stream.Recv()
	}
	if !stop() {
		return nil, ctx.Err()
	}
	if err != nil {
		s.cancel()
		return nil, err
	}
	p.put(s)
	return resp, nil
}

func (p *streamPool) get() (*exchangeStream, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(p.ctx)
	stream, err := p.rpc.Exchange(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &exchangeStream{stream: stream, cancel: cancel}, nil
}

func (p *streamPool) put(s *exchangeStream) {
	p.mu.Lock()
	if len(p.idle) < maxIdleStreams {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	// The plugin ends the stream when it reads the end of the requests; a
	// cancel could reach it first and would release the answer just read.
	_ = s.stream.CloseSend()
	go func() {
		_, _ = s.stream.Recv() // io.EOF once the plugin's loop returned
		s.cancel()
	}()
}

// Exchange answers the requests of one stream, one after the other, each
// in the stream's goroutine. The host sends a request only on an idle
// stream, and cancels the stream only to drop the request on it: so when
// the stream ends cancelled rather than with the end of the requests, the
// host never read the last answer, or dropped it, and the stream or
// download that answer holds open is released at once rather than after
// ContentIdle. The next request on the stream shows that the host read it.
func (s *server) Exchange(stream pluginv3.Plugin_ExchangeServer) error {
	ctx := stream.Context()
	var last *pluginv3.Response // sent, not known to be read
	for {
		m, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			s.release(last)
			return err
		}
		last = nil
		resp := s.handle(ctx, m)
		if err := stream.Send(resp); err != nil {
			s.release(resp.GetResponse())
			return err
		}
		if r := resp.GetResponse(); r.GetStream() != 0 || r.GetContent() != nil {
			last = r
		}
	}
}

// release closes the stream or download that the answer r holds open,
// which the host will not read.
func (s *server) release(r *pluginv3.Response) {
	if c := r.GetContent(); c != nil {
		s.contents.close(c.GetHandle())
	}
	if h := r.GetStream(); h != 0 {
		s.streams.close(h)
	}
}
