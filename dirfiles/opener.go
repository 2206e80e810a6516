package dirfiles

import (
	"context"
	"errors"
	"time"

	"github.com/reso-project/reso/core"
)

// Opener opens files to serve with the checks of the file download, for
// any plugin that serves files from a directory (the download of package
// files, the static files of package www):
//
//   - the open is confined to the directory with os.Root: "..", encoded
//     "..", and symbolic links never reach a file outside it;
//   - only a regular file is opened: a FIFO, socket or device answers
//     404 Not Found without being opened;
//   - none of the server's own state (the Setting: its state
//     files, and everything in its state directory) is ever opened,
//     under whatever name it is reached;
//   - every file system operation, the reads of the content included, is
//     bounded in time and in number.
//
// Build it with [NewOpener]; it is safe for concurrent use.
type Opener struct {
	hidden *hidden
	lim    *limiter
}

// Setting returns the paths of the server's own state files, one a line:
// a plugin asks its host for plugins.SettingHidden. An Opener asks at most
// once a second.
type Setting func(ctx context.Context) (string, error)

// NewOpener returns an Opener that never opens or lists the files setting
// names, nor anything in their directories.
// timeout bounds each file system operation and maxPending the operations
// under way at once; zero means [DefaultTimeout] and
// [DefaultMaxPending].
func NewOpener(setting Setting, timeout time.Duration, maxPending int) *Opener {
	return &Opener{hidden: newHidden(setting), lim: newLimiter(timeout, maxPending)}
}

// ErrStateDir is the error of [Opener.CheckDir] for a directory that
// lies in the server's state directory.
var ErrStateDir = errors.New("dirfiles: the directory lies in the server's state directory")

// CheckDir returns [ErrStateDir] when dir is, or lies in, one of the
// directories of the Setting, whose files Open would refuse
// one by one.
func (o *Opener) CheckDir(ctx context.Context, dir string) error {
	paths, err := o.hidden.paths(ctx)
	if err != nil {
		return err
	}
	hidden, err := statHidden(paths)
	if err != nil {
		return err
	}
	if in, err := dirHidden(dir, hidden); in || err != nil {
		return ErrStateDir
	}
	return nil
}

// Open opens name, a clean slash-separated path relative to dir ("." for
// dir itself), and returns it as content to serve with
// http.ServeContent; the content's reads are bounded too, and it is
// closed when the answer is done. A name that is not a regular file
// that may be served answers core.ErrNotFound; one that is there but
// cannot be read (permission, a link loop, an I/O error, a timeout)
// answers [ErrReadingFile].
func (o *Opener) Open(ctx context.Context, dir, name string) (*core.Content, error) {
	paths, err := o.hidden.paths(ctx)
	if err != nil {
		return nil, err
	}
	f, err := bounded(ctx, o.lim, func() (opened, error) {
		return openRegular(dir, name, paths)
	}, func(f opened) { f.f.Close() })
	if err != nil {
		return nil, given(ctx, err, ErrReadingFile)
	}
	return &core.Content{
		Name:     f.st.Name(),
		ModTime:  f.st.ModTime(),
		Size:     f.st.Size(),
		ReaderAt: &boundedFile{f: f.f, lim: o.lim},
	}, nil
}
