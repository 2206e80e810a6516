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
	"github.com/reso-project/reso/internal/poll"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

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
		poll.Within(t, 30*time.Second, "GET /file/"+name, func() {
			if _, err := fetch(t, d, name); err != core.ErrNotFound {
				t.Errorf("download %s: %v, want %v", name, err, core.ErrNotFound)
			}
		})
		poll.Within(t, 30*time.Second, "GET /files/"+name, func() {
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
