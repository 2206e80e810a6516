package dirfiles

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/reso-project/reso/core"
)

// Defaults of [NewOpener].
const (
	// DefaultTimeout bounds one file system operation: opening a file or
	// a directory, listing it, or one read of a download.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxPending bounds the file system operations under way at
	// once in one plugin (process).
	DefaultMaxPending = 64
)

// errTimeout is the error of an operation given up on: it did not finish,
// or could not start, within its time.
var errTimeout = errors.New("dirfiles: file system operation timed out")

// limiter runs file system operations bounded in time and in number.
//
// Each operation runs on a goroutine of its own while the caller waits for
// it, for the request's context or the timeout, whichever ends first. A
// caller that gives up answers at once; the operation goes on until the
// kernel returns, holding its slot, and undoes what it did (closes the file
// it opened). The kernel cannot be interrupted in a read of a hung network
// mount (NFS hard mounts, FUSE), so such an operation may hold its thread
// and slot for ever: the slots bound how many threads stuck operations can
// take (Go stops a program past 10,000 threads), and once they are all
// taken, file requests fail after the timeout instead of piling up.
type limiter struct {
	slots   chan struct{}
	timeout time.Duration
}

func newLimiter(timeout time.Duration, max int) *limiter {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if max <= 0 {
		max = DefaultMaxPending
	}
	return &limiter{slots: make(chan struct{}, max), timeout: timeout}
}

type result[T any] struct {
	v   T
	err error
}

// bounded runs op under l and returns its result, or errTimeout (or the
// context's error) when ctx ends or l's timeout passes first. undo, if not
// nil, releases a successful result that came too late.
func bounded[T any](ctx context.Context, l *limiter, op func() (T, error), undo func(T)) (T, error) {
	var zero T
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-timer.C:
		return zero, errTimeout
	}
	ch := make(chan result[T], 1)
	go func() {
		var r result[T]
		defer func() {
			if v := recover(); v != nil {
				r.err = core.NewPanicError(v)
			}
			<-l.slots // before the result: once it is seen, the slot is free
			ch <- r
		}()
		r.v, r.err = op()
	}()
	var err error
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errTimeout
	}
	if undo != nil {
		go func() {
			if r := <-ch; r.err == nil {
				undo(r.v)
			}
		}()
	}
	return zero, err
}

// readBuffers holds the buffers reads go to before they are copied to the
// caller's: a read given up on may still write into its buffer later.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// boundedFile is an open regular file whose reads are bounded by a limiter.
// It is the content of a download, closed when the answer is done.
type boundedFile struct {
	f   readerAtCloser // an *os.File; a stand-in in tests
	lim *limiter
}

type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// ReadAt reads like os.File.ReadAt within the limiter's timeout. The
// timeout is not the request's context: the content outlives the call of
// Handle (out of process, it is read by later calls).
func (b *boundedFile) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	bp := readBuffers.Get().(*[]byte)
	if cap(*bp) < len(p) {
		*bp = make([]byte, len(p))
	}
	buf := (*bp)[:len(p)]
	r, err := bounded(context.Background(), b.lim, func() (result[int], error) {
		n, err := b.f.ReadAt(buf, off)
		return result[int]{n, err}, nil
	}, nil)
	if err != nil {
		// The read may still be under way: its buffer is left to it.
		return 0, err
	}
	n := copy(p, buf[:r.v])
	readBuffers.Put(bp)
	return n, r.err
}

// Close closes the file. A read still under way keeps the descriptor until
// it returns (os.File defers the close of a descriptor in use).
func (b *boundedFile) Close() error { return b.f.Close() }
