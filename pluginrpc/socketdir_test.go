//go:build unix

package pluginrpc

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/internal/poll"
)

// socketsIn returns the Unix sockets in dir.
func socketsIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var socks []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			socks = append(socks, e.Name())
		}
	}
	return socks
}

// TestSocketDirRemoved: a plugin process makes its socket in a directory
// of its own, the host's user's alone, and the host removes it once the
// process ended: killed with -9 (its restart gets another) and at Close.
func TestSocketDirRemoved(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	dir := c.cur.Load().sockets
	if dir == "" {
		t.Fatal("the plugin process has no socket directory")
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("socket directory %s has mode %v, want 0700", dir, perm)
	}
	if socks := socketsIn(t, dir); len(socks) != 1 {
		t.Errorf("socket directory holds %q, want the process's socket", socks)
	}

	old := c.PID()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 15*time.Second, "the restarted plugin", func() bool {
		return c.PID() != 0 && c.PID() != old
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed process's socket directory is still there (%v)", err)
	}
	next := c.cur.Load().sockets
	if next == "" || next == dir {
		t.Fatalf("the restarted process's socket directory is %q (the killed one's %q)", next, dir)
	}
	if socks := socketsIn(t, next); len(socks) != 1 {
		t.Errorf("the restarted process's directory holds %q, want its socket", socks)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(next); !os.IsNotExist(err) {
		t.Errorf("socket directory still there after Close (%v)", err)
	}
}

// TestSweepSocketDirs: the socket directories of hosts that ended are
// removed; those of running hosts, and anything else, are left alone.
func TestSweepSocketDirs(t *testing.T) {
	tmp := t.TempDir()
	names := map[string]bool{ // name: removed
		socketDirPrefix + "111-4021": true,
		socketDirPrefix + "222-9310": false, // its host runs
		socketDirPrefix + "x-1":      false, // not a process id
		"reso-other-111-1":           false,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(tmp, name, "plugin123"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A file of that name is not a directory of a host's.
	file := filepath.Join(tmp, socketDirPrefix+"111-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sweepSocketDirs(tmp, func(pid int) bool { return pid == 111 })
	for name, removed := range names {
		_, err := os.Stat(filepath.Join(tmp, name))
		if got := os.IsNotExist(err); got != removed {
			t.Errorf("%s removed: %v, want %v", name, got, removed)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the file was touched: %v", err)
	}
	if !processGone(1 << 22) { // above pid_max's greatest value
		t.Error("processGone(4194304) = false")
	}
	if processGone(os.Getpid()) {
		t.Error("processGone(this process) = true")
	}
}
