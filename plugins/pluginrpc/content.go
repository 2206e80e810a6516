package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
)

// remoteContent is a download open in the plugin, as the host reads it: an
// io.ReaderAt over the Read stream. Sequential reads (what http.ServeContent
// does) are served from one stream that runs ahead of them, bounded by
// gRPC's flow-control window; a read elsewhere (a Range request) starts a
// new stream at its offset. Close releases the content in the plugin.
type remoteContent struct {
	ctx    context.Context // the request's
	rpc    pluginv2.PluginClient
	handle uint64
	size   int64

	mu     sync.Mutex
	stream pluginv2.Plugin_ReadClient
	cancel context.CancelFunc
	pos    int64  // offset of buf[0] in the content
	buf    []byte // received, not yet read
	closed bool
}

// ReadAt reads len(p) bytes at off, or up to the end of the content with
// io.EOF.
func (r *remoteContent) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("pluginrpc: read content: negative offset")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errors.New("pluginrpc: read content: closed")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), r.size-off))
	n := 0
	for n < want {
		at := off + int64(n)
		if r.stream == nil || at != r.pos {
			if err := r.open(at); err != nil {
				return n, err
			}
		}
		if len(r.buf) == 0 {
			chunk, err := r.stream.Recv()
			if err == io.EOF {
				// The content is shorter than announced (the file shrank).
				r.stop()
				return n, io.EOF
			}
			if err != nil {
				r.stop()
				if ctxErr := r.ctx.Err(); ctxErr != nil {
					return n, ctxErr
				}
				return n, fmt.Errorf("pluginrpc: read content: %s", status.Convert(err).Message())
			}
			r.buf = chunk.GetData()
			continue
		}
		m := copy(p[n:want], r.buf)
		r.buf = r.buf[m:]
		r.pos += int64(m)
		n += m
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// open starts a stream from off to the end of the content.
func (r *remoteContent) open(off int64) error {
	r.stop()
	ctx, cancel := context.WithCancel(r.ctx)
	stream, err := r.rpc.Read(ctx, &pluginv2.ReadRequest{Handle: r.handle, Offset: off, Length: r.size - off})
	if err != nil {
		cancel()
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("pluginrpc: read content: %s", status.Convert(err).Message())
	}
	r.stream, r.cancel, r.pos, r.buf = stream, cancel, off, nil
	return nil
}

// stop ends the current stream.
func (r *remoteContent) stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.stream, r.cancel, r.buf = nil, nil, nil
}

// Close releases the content in the plugin.
func (r *remoteContent) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.stop()
	r.mu.Unlock()
	// The request may be over: keep its values, not its cancellation.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
	defer cancel()
	if _, err := r.rpc.CloseContent(ctx, &pluginv2.CloseContentRequest{Handle: r.handle}); err != nil {
		return fmt.Errorf("pluginrpc: close content: %s", status.Convert(err).Message())
	}
	return nil
}

var (
	_ io.ReaderAt = (*remoteContent)(nil)
	_ io.Closer   = (*remoteContent)(nil)
)
