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

	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Downloads (core.Response.Content) across the process boundary: the
// plugin keeps the content open under a handle and streams its bytes with
// Read; the host reads it as an io.ReaderAt.

// remoteContent is a download open in the plugin, as the host reads it: an
// io.ReaderAt over the Read stream. Sequential reads (what http.ServeContent
// does) are served from one stream that runs ahead of them, bounded by
// gRPC's flow-control window; a read elsewhere (a Range request) starts a
// new stream at its offset. Close releases the content in the plugin.
type remoteContent struct {
	ctx    context.Context // the request's
	rpc    pluginv3.PluginClient
	handle uint64
	size   int64

	mu     sync.Mutex
	stream pluginv3.Plugin_ReadClient
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
	stream, err := r.rpc.Read(ctx, &pluginv3.ReadRequest{Handle: r.handle, Offset: off, Length: r.size - off})
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
	if _, err := r.rpc.CloseContent(ctx, &pluginv3.CloseContentRequest{Handle: r.handle}); err != nil {
		return fmt.Errorf("pluginrpc: close content: %s", status.Convert(err).Message())
	}
	return nil
}

// ContentIdle is how long the plugin keeps an open download that the
// host neither reads nor closes.
const ContentIdle = 2 * time.Minute

// chunkSize is the size of the chunks of a download.
const chunkSize = 256 << 10

// Read streams the bytes of an open download.
func (s *server) Read(req *pluginv3.ReadRequest, stream pluginv3.Plugin_ReadServer) error {
	off, n := req.GetOffset(), req.GetLength()
	if off < 0 || n < 0 {
		return status.Error(codes.InvalidArgument, "pluginrpc: negative offset or length")
	}
	ra, release := s.contents.acquire(req.GetHandle())
	if ra == nil {
		return status.Errorf(codes.NotFound, "pluginrpc: no open content %d", req.GetHandle())
	}
	defer release()
	ctx := stream.Context()
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		buf := make([]byte, min(n, chunkSize))
		m, err := ra.ReadAt(buf, off)
		if m > 0 {
			if err := stream.Send(&pluginv3.ReadChunk{Data: buf[:m]}); err != nil {
				return err
			}
			off += int64(m)
			n -= int64(m)
		}
		if err == io.EOF || err == nil && m < len(buf) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "pluginrpc: read content: %v", err)
		}
	}
	return nil
}

// CloseContent releases an open download.
func (s *server) CloseContent(_ context.Context, req *pluginv3.CloseContentRequest) (*pluginv3.CloseContentResponse, error) {
	s.contents.close(req.GetHandle())
	return &pluginv3.CloseContentResponse{}, nil
}

// contentTable holds the open downloads of a plugin by handle.
type contentTable struct {
	idle time.Duration

	mu   sync.Mutex
	next uint64
	m    map[uint64]*openContent
}

type openContent struct {
	ra      io.ReaderAt
	readers int
	timer   *time.Timer
}

func newContentTable(idle time.Duration) *contentTable {
	return &contentTable{idle: idle, m: make(map[uint64]*openContent)}
}

// open keeps ra and returns its handle (never 0).
func (t *contentTable) open(ra io.ReaderAt) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	h := t.next
	t.m[h] = &openContent{ra: ra, timer: time.AfterFunc(t.idle, func() { t.expire(h) })}
	return h
}

// acquire returns the content of handle h for reading, or nil.
func (t *contentTable) acquire(h uint64) (io.ReaderAt, func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[h]
	if c == nil || c.ra == nil {
		return nil, nil
	}
	c.readers++
	c.timer.Stop()
	return c.ra, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		c.readers--
		if c.readers == 0 && t.m[h] == c {
			c.timer.Reset(t.idle)
		}
	}
}

// expire closes content h unless it is being read.
func (t *contentTable) expire(h uint64) {
	t.mu.Lock()
	c := t.m[h]
	if c == nil || c.readers > 0 {
		t.mu.Unlock()
		return
	}
	delete(t.m, h)
	t.mu.Unlock()
	closeReaderAt(c.ra)
}

// close closes content h.
func (t *contentTable) close(h uint64) {
	t.mu.Lock()
	c := t.m[h]
	delete(t.m, h)
	t.mu.Unlock()
	if c != nil {
		c.timer.Stop()
		closeReaderAt(c.ra)
	}
}

func (t *contentTable) closeAll() {
	t.mu.Lock()
	m := t.m
	t.m = make(map[uint64]*openContent)
	t.mu.Unlock()
	for _, c := range m {
		c.timer.Stop()
		closeReaderAt(c.ra)
	}
}

func closeReaderAt(ra io.ReaderAt) {
	if c, ok := ra.(io.Closer); ok {
		_ = c.Close()
	}
}

var (
	_ io.ReaderAt = (*remoteContent)(nil)
	_ io.Closer   = (*remoteContent)(nil)
)
