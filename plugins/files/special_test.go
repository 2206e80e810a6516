//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package files

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// within fails t if f does not return within a generous time: a guard
// against a hang, not a timing assertion.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// TestNotRegular: a FIFO, a socket and links to them are never opened:
// downloads answer 404 Not Found at once, listings leave them out, and a
// listing of a FIFO's path does not wait for a writer either.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	os.Symlink("fifo", filepath.Join(dir, "fifo-link"))
	os.WriteFile(filepath.Join(dir, "ok"), []byte("ok"), 0o644)
	fsys := testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir}))
	d, l := &download{fsys}, &listing{fsys}
	for _, name := range []string{"fifo", "fifo-link", "sock"} {
		within(t, "GET /file/"+name, func() {
			if _, err := fetch(t, d, name); err != core.ErrNotFound {
				t.Errorf("download %s: %v, want %v", name, err, core.ErrNotFound)
			}
		})
		within(t, "GET /files/"+name, func() {
			if _, err := l.Get(context.Background(), &core.Request{Path: name}); err != core.ErrNotFound {
				t.Errorf("listing %s: %v, want %v", name, err, core.ErrNotFound)
			}
		})
	}
	v, err := l.Get(context.Background(), &core.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, v); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("listing %q, want [ok]", got)
	}
}

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
		within(t, "open of "+name, func() {
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
