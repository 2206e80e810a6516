package dirfiles

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"syscall"

	"github.com/reso-project/reso/core"
)

// ErrReadingFile is the error of a file that is there but cannot be read:
// permission, a link loop, an I/O error, a timeout
// (docs/wire.md#status-line-table).
var ErrReadingFile = core.Status(http.StatusBadRequest, "Error Reading File")

// given maps the error of an operation given up on (its timeout passed, or
// the request ended) to notDone, and leaves other errors as they are.
func given(ctx context.Context, err, notDone error) error {
	if errors.Is(err, errTimeout) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return notDone
	}
	return err
}

// openError maps a failed stat or open: a name that is not there (or leads
// outside the directory) is 404 Not Found; one that is there but cannot be
// opened (permission, a link loop, an I/O error) is 400 Error Reading File.
func openError(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EIO) {
		return ErrReadingFile
	}
	return core.ErrNotFound
}

// opened is a file open for download and what fstat said of it.
type opened struct {
	f  *os.File
	st fs.FileInfo
}

// openRegular opens name in dir for reading if it is a regular file that
// is none of the files at hiddenPaths and lies in none of the directories
// there.
//
// The file is stat'ed (through the root, symbolic links inside it
// followed) before it is opened, so that a FIFO, a socket or a device is
// never opened; it is then opened without blocking and fstat'ed, so that a
// file swapped in between is caught.
func openRegular(dir, name string, hiddenPaths []string) (opened, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return opened{}, core.ErrNotFound
	}
	defer root.Close()
	pre, err := root.Stat(name)
	if err != nil {
		return opened{}, openError(err)
	}
	if !pre.Mode().IsRegular() {
		return opened{}, core.ErrNotFound
	}
	hidden, err := statHidden(hiddenPaths)
	if err != nil {
		return opened{}, err
	}
	if isHidden(hidden, pre) {
		return opened{}, core.ErrNotFound
	}
	in, err := inHiddenDir(root, dir, name, hidden)
	if err != nil {
		return opened{}, err
	}
	if in {
		return opened{}, core.ErrNotFound
	}
	f, err := root.OpenFile(name, os.O_RDONLY|downloadFlags, 0)
	if err != nil {
		return opened{}, openError(err)
	}
	st, err := checkOpened(f, pre)
	if err != nil {
		f.Close()
		return opened{}, err
	}
	return opened{f: f, st: st}, nil
}

// checkOpened fstats f and returns what it says if f is the regular file
// pre describes; a file swapped in between stat and open is 404 Not Found.
func checkOpened(f *os.File, pre fs.FileInfo) (fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, ErrReadingFile
	}
	if !st.Mode().IsRegular() || !os.SameFile(pre, st) {
		return nil, core.ErrNotFound
	}
	return st, nil
}

var (
	_ io.ReaderAt = (*boundedFile)(nil)
	_ io.Closer   = (*boundedFile)(nil)
)
