package dirfiles

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
)

// A short timeout lets the tests give up on operations that block until
// the test releases them; no test depends on how long anything takes.
const shortTimeout = 10 * time.Millisecond

func TestBoundedGivesUp(t *testing.T) {
	l := newLimiter(shortTimeout, 1)
	release := make(chan struct{})
	undone := make(chan int, 1)
	_, err := bounded(context.Background(), l, func() (int, error) {
		<-release
		return 7, nil
	}, func(v int) { undone <- v })
	if !errors.Is(err, errTimeout) {
		t.Fatalf("stuck operation: %v, want errTimeout", err)
	}
	// Its slot stays taken while it is stuck: the next one cannot start.
	if _, err := bounded(context.Background(), l, func() (int, error) { return 1, nil }, nil); !errors.Is(err, errTimeout) {
		t.Fatalf("with every slot stuck: %v, want errTimeout", err)
	}
	close(release)
	if v := <-undone; v != 7 {
		t.Errorf("undo got %d, want 7", v)
	}
	// Once it returned, its slot is free again.
	if v, err := bounded(context.Background(), l, func() (int, error) { return 1, nil }, nil); v != 1 || err != nil {
		t.Errorf("after the release: %d %v", v, err)
	}
}

func TestBoundedPanic(t *testing.T) {
	l := newLimiter(time.Hour, 1)
	_, err := bounded(context.Background(), l, func() (int, error) { panic("boom") }, nil)
	var pe *core.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("panicking operation: %v, want a PanicError", err)
	}
	if _, err := bounded(context.Background(), l, func() (int, error) { return 1, nil }, nil); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

func TestBoundedContext(t *testing.T) {
	l := newLimiter(time.Hour, 1)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	go func() { cancel() }()
	if _, err := bounded(ctx, l, func() (int, error) { <-release; return 0, nil }, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ended request: %v, want context.Canceled", err)
	}
	wantErr := errors.New("x")
	if _, err := bounded(context.Background(), newLimiter(time.Hour, 1), func() (int, error) { return 0, wantErr }, nil); err != wantErr {
		t.Errorf("failed operation: %v, want its error", err)
	}
}

// stuckReader blocks every read until release is closed, then fills p.
type stuckReader struct {
	release chan struct{}
	closed  atomic.Bool
}

func (r *stuckReader) ReadAt(p []byte, off int64) (int, error) {
	<-r.release
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func (r *stuckReader) Close() error { r.closed.Store(true); return nil }

// TestBoundedFileStuckRead: a read that blocks gives up within the
// timeout, and never writes into the caller's buffer afterwards (the race
// detector would see it).
func TestBoundedFileStuckRead(t *testing.T) {
	r := &stuckReader{release: make(chan struct{})}
	b := &boundedFile{f: r, lim: newLimiter(shortTimeout, 4)}
	p := make([]byte, 64)
	n, err := b.ReadAt(p, 0)
	if n != 0 || !errors.Is(err, errTimeout) {
		t.Fatalf("stuck read: %d %v, want errTimeout", n, err)
	}
	b.Close()
	close(r.release)
	for i := range p {
		p[i] = 'y' // the caller reuses its buffer
	}
	if !r.closed.Load() {
		t.Error("not closed")
	}
}

func TestBoundedFileRead(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10000)
	b := &boundedFile{f: nopCloser{bytes.NewReader(data)}, lim: newLimiter(0, 0)}
	got, err := io.ReadAll(io.NewSectionReader(b, 0, int64(len(data))))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	p := make([]byte, 100)
	if n, err := b.ReadAt(p, int64(len(data))-10); n != 10 || err != io.EOF {
		t.Errorf("read at the end: %d %v, want 10 EOF", n, err)
	}
}

type nopCloser struct{ io.ReaderAt }

func (nopCloser) Close() error { return nil }
