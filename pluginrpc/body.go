package pluginrpc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
)

// Request bodies: the host sends a short body inline and keeps any other
// under a token, read through Host.ReadBody; the plugin's handler reads the
// inline bytes, then pulls the rest only when it reads that far.

// inlineBody is the largest request body sent with the request; a longer
// body, or one of unknown length, is pulled by the plugin when it reads.
const inlineBody = 64 << 10

// bodyTable holds the request bodies that plugins pull with Host.ReadBody.
type bodyTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*bodySource
}

type bodySource struct {
	mu   sync.Mutex
	r    io.Reader
	done bool
}

// encode returns the body message of r: all of it inline when it is short
// and its length declared, else a token for the plugin to pull it with.
func (t *bodyTable) encode(r io.Reader, contentLength int64) (*pluginv3.Body, uint64) {
	b := &pluginv3.Body{Present: true}
	if r == http.NoBody {
		return b, 0
	}
	if contentLength >= 0 && contentLength <= inlineBody {
		data, err := readAtMost(r, int(contentLength)+1)
		b.Data = data
		switch {
		case err == io.EOF:
			return b, 0
		case err != nil:
			b.Error = encodeBodyError(err)
			return b, 0
		}
		// Longer than declared: the rest is pulled.
	}
	t.mu.Lock()
	t.next++
	token := t.next
	t.m[token] = &bodySource{r: r}
	t.mu.Unlock()
	b.Token = token
	return b, token
}

func (t *bodyTable) get(token uint64) *bodySource {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[token]
}

func (t *bodyTable) remove(token uint64) {
	t.mu.Lock()
	delete(t.m, token)
	t.mu.Unlock()
}

// readAtMost reads from r until it has n bytes (err nil) or r fails (err
// io.EOF at the end).
func readAtMost(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		m, err := r.Read(buf[got:])
		got += m
		if err != nil {
			return buf[:got], err
		}
	}
	return buf, nil
}

// ReadBody reads the next bytes of a request body.
func (s *hostServer) ReadBody(_ context.Context, req *pluginv3.ReadBodyRequest) (*pluginv3.ReadBodyResponse, error) {
	src := s.bodies.get(req.GetToken())
	if src == nil {
		return nil, status.Error(codes.NotFound, "pluginrpc: no such request body (the request is over)")
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.done {
		return &pluginv3.ReadBodyResponse{Eof: true}, nil
	}
	n := int(min(max(req.GetMax(), 1), chunkSize))
	data, err := readAtMost(src.r, n)
	resp := &pluginv3.ReadBodyResponse{Data: data}
	switch {
	case err == io.EOF:
		src.done, resp.Eof = true, true
	case err != nil:
		src.done, resp.Error = true, encodeBodyError(err)
	}
	return resp, nil
}

// bodyReader is a request body in the plugin: the inline bytes, then the
// rest pulled from the host, then the host's read error or io.EOF.
type bodyReader struct {
	ctx   context.Context
	host  *remoteHost
	data  []byte
	token uint64
	err   *pluginv3.BodyError
	done  bool
}

// Read reads the body.
func (b *bodyReader) Read(p []byte) (int, error) {
	for len(b.data) == 0 {
		if b.token == 0 || b.done {
			if b.err != nil {
				return 0, decodeBodyError(b.err)
			}
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if b.host == nil {
			return 0, errors.New("pluginrpc: request body: no host")
		}
		resp, err := b.host.client.ReadBody(b.ctx, &pluginv3.ReadBodyRequest{Token: b.token, Max: int32(min(max(len(p), 32<<10), chunkSize))})
		if err != nil {
			b.done = true
			b.err = &pluginv3.BodyError{Message: wire("pluginrpc: request body: " + status.Convert(err).Message())}
			continue
		}
		b.data = resp.GetData()
		if resp.GetEof() || resp.GetError() != nil {
			b.done = true
			b.err = resp.GetError()
		}
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

var _ io.Reader = (*bodyReader)(nil)
