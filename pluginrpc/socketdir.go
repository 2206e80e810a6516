//go:build unix

package pluginrpc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	plugin "github.com/hashicorp/go-plugin"
)

// A plugin process makes its Unix socket in a directory of its own, which
// the host makes before the start and removes once the process has ended:
// go-plugin's server otherwise makes it in the temporary directory and
// removes it only when it exits by itself, so that every plugin process
// killed (a crash, a restart after kill -9, the host's death, whose
// signal kills its plugins) left a socket there for good. The directory
// is the host's user's alone (0700), so no other user of the machine
// reaches the socket even to try the TLS handshake.
//
// A host killed by SIGKILL cannot remove its plugins' directories; the
// name of each holds the host's process id, and the next host to start a
// plugin removes those of hosts that are no longer running.

// socketDirPrefix begins the name of a plugin process's socket directory,
// followed by the host's process id and a dash.
const socketDirPrefix = "reso-plugin-"

// sweepOnce runs sweepSocketDirs at a process's first plugin start.
var sweepOnce sync.Once

// socketDir makes the directory the plugin process of cmd makes its socket
// in and names it in cmd's environment (go-plugin's
// PLUGIN_UNIX_SOCKET_DIR). The caller removes it once the process ended.
func socketDir(cmd *exec.Cmd) (string, error) {
	sweepOnce.Do(func() { sweepSocketDirs(os.TempDir(), processGone) })
	dir, err := os.MkdirTemp("", socketDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	addEnv(cmd, plugin.EnvUnixSocketDir+"="+dir)
	return dir, nil
}

// sweepSocketDirs removes the socket directories in tmp of hosts that
// gone reports ended, when this user owns them.
func sweepSocketDirs(tmp string, gone func(pid int) bool) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), socketDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		id, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(id)
		if !ok || err != nil || pid <= 0 || !gone(pid) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

// processGone reports whether no process has the id pid.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// removeSockets removes the socket directory dir of a process that ended;
// "" is none.
func removeSockets(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
