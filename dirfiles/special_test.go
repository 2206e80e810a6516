//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dirfiles

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// TestOpenSwapped: a file whose identity changed between the stat and the
// open (a FIFO or another regular file opened where a regular file was
// stat'ed, as a swap would give) is refused, and the open of a FIFO does
// not wait for a writer.
func TestOpenSwapped(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "b"), []byte("b"), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	pre, err := root.Stat("a")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]error{"a": nil, "b": core.ErrNotFound, "fifo": core.ErrNotFound} {
		poll.Within(t, 30*time.Second, "open of "+name, func() {
			f, err := root.OpenFile(name, os.O_RDONLY|downloadFlags, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := checkOpened(f, pre); err != want {
				t.Errorf("%s opened where a was stat'ed: %v, want %v", name, err, want)
			}
		})
	}
}
