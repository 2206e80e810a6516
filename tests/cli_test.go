package tests

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Black-box tests of the command line: flag validation, the state
// directory, user management, version and shutdown.

// runReso runs the binary with args in dir, with the given extra
// environment and standard input, and returns its output and exit status.
func runReso(t testing.TB, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	raceFree(t, e.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running reso %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// entries lists what is under dir, as relative paths.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func TestBadFlagsLeaveNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bare port", []string{"-addr", "8011"}, "reso: -addr 8011: missing colon: did you mean :8011?\n"},
		{"bad addr", []string{"-addr", "local host"}, "reso: -addr local host: want HOST:PORT, e.g. :8000 or 127.0.0.1:8000\n"},
		{"bad port", []string{"-addr", ":99999"}, "reso: -addr :99999: bad port \"99999\"\n"},
		{"timeout without unit", []string{"-read-timeout", "5"}, "reso: invalid value \"5\" for flag -read-timeout: use a unit, e.g. 5s\n"},
		{"negative timeout", []string{"-read-timeout", "-5s"}, "reso: invalid value \"-5s\" for flag -read-timeout: must not be negative\n"},
		{"negative grace", []string{"-shutdown-timeout", "-1s"}, "reso: invalid value \"-1s\" for flag -shutdown-timeout: must not be negative\n"},
		{"missing directory", []string{"-directory", "no/such/dir"}, "reso: -directory no/such/dir: no such file or directory\n"},
		{"directory is a file", []string{"-directory", "/etc/hostname"}, "reso: -directory /etc/hostname: not a directory\n"},
		{"unknown flag", []string{"-no-such-flag"}, "reso: flag provided but not defined: -no-such-flag\n"},
		{"stray argument", []string{"serve"}, "reso: unexpected argument \"serve\" (subcommands: user, admin-token, plugin; see reso -h)\n"},
		{"bad login", []string{"-login", "nocolon"}, "reso: -login: want EMAIL:PASSWORD, or '' for no example user\n"},
		{"zero body limit", []string{"-body-limit", "0"}, "reso: -body-limit must be a positive number of bytes\n"},
		{"pprof off loopback", []string{"-admin-addr", "0.0.0.0:6060", "-pprof"}, "reso: -admin-addr 0.0.0.0:6060: with -pprof only a loopback address is allowed (127.0.0.1, ::1 or localhost)\n"},
		{"admin address without port", []string{"-admin-addr", "127.0.0.1"}, "reso: -admin-addr 127.0.0.1: want HOST:PORT, e.g. 127.0.0.1:9090\n"},
		{"pprof without admin address", []string{"-pprof"}, "reso: -pprof needs -admin-addr\n"},
		{"bad db sync", []string{"-db-sync", "extra"}, "reso: invalid value \"extra\" for flag -db-sync: want normal or full\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(t.TempDir(), "state")
			stdout, stderr, code := runReso(t, dir, []string{"XDG_STATE_HOME=" + state}, "", c.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if stderr != c.want || stdout != "" {
				t.Errorf("stderr %q stdout %q, want stderr %q", stderr, stdout, c.want)
			}
			if got := entries(t, dir); len(got) != 0 {
				t.Errorf("left in the working directory: %q", got)
			}
			if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the state directory was created (%v)", err)
			}
		})
	}
}

func TestHelpListsSubcommands(t *testing.T) {
	t.Parallel()
	stdout, _, code := runReso(t, t.TempDir(), nil, "", "-h")
	if code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, want := range []string{"reso user add", "reso user list", "reso admin-token", "reso plugin NAME", "-db", "~/.local/state/reso", "-shutdown-timeout",
		// The whole bundled set, not only the example application.
		"example application", "resource channel", "/channel", "call control", "/console/", "a web app's static files"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("-h does not mention %q:\n%s", want, stdout)
		}
	}
}

func TestPortInUseLeavesNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	_, stderr, code := runReso(t, dir, []string{"XDG_STATE_HOME=" + state}, "", "-addr", ln.Addr().String())
	if code != 1 || !strings.Contains(stderr, "address already in use") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state directory was created (%v)", err)
	}
}

// TestStateDirectory starts the server with its defaults: the login records
// and the secret go to $XDG_STATE_HOME/reso, private, and nothing to the
// served directory.
func TestStateDirectory(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		before := entries(t, dir)
		state := filepath.Join(t.TempDir(), "xdg")
		s, err := startWith(t, dir, m, launch{env: []string{"XDG_STATE_HOME=" + state}, stateDB: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.stop()
		if got := s.get(t, "/private/x", authBasic("user@example.org", "example")); got.StatusLine != "HTTP/1.1 200 OK" {
			t.Fatalf("login: %s", got.StatusLine)
		}
		st, err := os.Stat(filepath.Join(state, "reso"))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("state directory: %v %v", st, err)
		}
		for _, name := range []string{"reso.db", "reso.db-wal", "reso.db-shm", "secret"} {
			st, err := os.Stat(filepath.Join(state, "reso", name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", name, st.Mode().Perm())
			}
		}
		if after := entries(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("the served directory changed: %q, was %q", after, before)
		}
		if got := s.get(t, "/files"); strings.Contains(got.Body, "reso.db") || strings.Contains(got.Body, "secret") {
			t.Errorf("listing shows state: %s", got.Body)
		}
	})
}

func TestUserCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "logins.db")
	env := []string{"XDG_STATE_HOME=" + filepath.Join(dir, "state")}
	user := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runReso(t, dir, env, stdin, append([]string{"user"}, args...)...)
	}
	if out, errs, code := user("s3cret\n", "add", "ada@example.org", "-db", db); code != 0 || out != "added ada@example.org (id 1)\n" {
		t.Fatalf("add: %q %q %d", out, errs, code)
	}
	if _, errs, code := user("x\n", "add", "ada@example.org", "-db", db); code != 1 || !strings.Contains(errs, "exists") {
		t.Errorf("add twice: %q %d", errs, code)
	}
	if _, errs, code := user("", "add", "ada@example.org", "pw", "-db", db); code != 2 {
		t.Errorf("a password on the command line: %q %d", errs, code)
	}
	if _, errs, code := user("", "add", "bob@example.org", "-db", db); code != 1 || !strings.Contains(errs, "no password on standard input") {
		t.Errorf("add without a password: %q %d", errs, code)
	}
	if _, errs, code := user("x\n", "passwd", "nobody@example.org", "-db", db); code != 1 || !strings.Contains(errs, "no user") {
		t.Errorf("passwd of nobody: %q %d", errs, code)
	}
	if _, errs, code := user("", "frobnicate", "-db", db); code != 2 || !strings.Contains(errs, "unknown user command") {
		t.Errorf("unknown command: %q %d", errs, code)
	}

	// The server sees the user; list never shows hashes or tokens.
	s := start(t, mode{name: "compiled"}, "-db", db, "-login", "")
	if got := s.get(t, "/private/x", authBasic("ada@example.org", "s3cret")); got.StatusLine != "HTTP/1.1 200 OK" {
		t.Fatalf("login of the added user: %s", got.StatusLine)
	}
	out, _, code := user("", "list", "-db", db)
	want := "ID  EMAIL            REALM      SESSION\n1   ada@example.org  localhost  yes\n"
	if code != 0 || out != want {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	if _, errs, code := user("n3w\n", "passwd", "ada@example.org", "-db", db); code != 0 {
		t.Errorf("passwd: %q %d", errs, code)
	}
	s.stop()
	s = start(t, mode{name: "compiled"}, "-db", db, "-login", "")
	if got := s.get(t, "/private/x", authBasic("ada@example.org", "s3cret")); got.StatusLine != "HTTP/1.1 401 Unauthorized" {
		t.Errorf("old password after passwd: %s", got.StatusLine)
	}
	if got := s.get(t, "/private/x", authBasic("ada@example.org", "n3w")); got.StatusLine != "HTTP/1.1 200 OK" {
		t.Errorf("new password after passwd: %s", got.StatusLine)
	}
	s.stop()
	if out, errs, code := user("", "remove", "ada@example.org", "-db", db); code != 0 || out != "removed ada@example.org\n" {
		t.Errorf("remove: %q %q %d", out, errs, code)
	}
	if _, errs, code := user("", "remove", "ada@example.org", "-db", db); code != 1 || !strings.Contains(errs, "no user") {
		t.Errorf("remove twice: %q %d", errs, code)
	}
	if out, _, _ := user("", "list", "-db", db); out != "ID  EMAIL  REALM  SESSION\n" {
		t.Errorf("list after remove: %q", out)
	}
}

// TestLoginEmptyRemovesExampleUser: the default example user is created at
// start when missing, and -login ” removes it.
func TestLoginEmptyRemovesExampleUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "logins.db")
	s := start(t, mode{name: "compiled"}, "-db", db)
	if got := s.get(t, "/private/x", authBasic("user@example.org", "example")); got.StatusLine != "HTTP/1.1 200 OK" {
		t.Fatalf("example user: %s", got.StatusLine)
	}
	s.stop()
	s = start(t, mode{name: "compiled"}, "-db", db, "-login", "")
	if got := s.get(t, "/private/x", authBasic("user@example.org", "example")); got.StatusLine != "HTTP/1.1 401 Not Found" {
		t.Errorf("example user after -login '': %s", got.StatusLine)
	}
	s.stop()
	if out, _, _ := runReso(t, dir, nil, "", "user", "list", "-db", db); strings.Contains(out, "user@example.org") {
		t.Errorf("list after -login '':\n%s", out)
	}
}

// hangingPut starts a PUT whose body never arrives in full and returns
// its connection once the server's handler is reading the body, so that
// the request is in flight: the request asks for 100 Continue, which the
// server sends when the handler first reads, and only then sends part of
// the body. (A server that begins to shut down while it reads a request's
// header closes the connection instead of serving it, so a request merely
// sent may never be in flight.)
func hangingPut(t *testing.T, s *server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte("PUT /config HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	const cont = "HTTP/1.1 100 Continue\r\n\r\n"
	got := make([]byte, len(cont))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != cont {
		t.Fatalf("PUT /config with Expect: 100-continue: %q, %v", got, err)
	}
	c.SetReadDeadline(time.Time{})
	if _, err := c.Write([]byte("some")); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitLog waits until the server's log contains want.
func waitLog(t *testing.T, s *server, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.Log(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitStatus waits for the server to end and returns its exit status.
func exitStatus(t *testing.T, s *server) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.kill()
		t.Fatalf("the server did not exit:\n%s", s.Log())
	}
	return s.cmd.ProcessState.ExitCode()
}

func TestShutdownCutsLateRequests(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-shutdown-timeout", "300ms")
		hangingPut(t, s)
		s.cmd.Process.Signal(syscall.SIGTERM)
		if code := exitStatus(t, s); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
		log := s.Log()
		if !strings.Contains(log, `msg="request cut at shutdown" method=PUT path=/config`) {
			t.Errorf("the cut request is not named:\n%s", log)
		}
	})
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	s := start(t, mode{name: "compiled"}, "-shutdown-timeout", "10m")
	hangingPut(t, s)
	s.cmd.Process.Signal(syscall.SIGTERM)
	waitLog(t, s, "reso shutting down")
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := exitStatus(t, s); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if !strings.Contains(s.Log(), "second signal: exiting now") {
		t.Errorf("log:\n%s", s.Log())
	}
}

func TestVersionFromBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	ldflags := filepath.Join(dir, "reso-ldflags")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X github.com/reso-project/reso/app.version=9.9.9", "-o", ldflags, "../cmd/reso")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if out, err := execOutput(ldflags, "-version"); err != nil || out != "reso 9.9.9\n" {
		t.Errorf("-version with -ldflags: %q %v", out, err)
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout: %v", err)
	}
	vcs := filepath.Join(dir, "reso-vcs")
	build = exec.Command("go", "build", "-buildvcs=true", "-o", vcs, "../cmd/reso")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if info, _ := exec.Command("go", "version", "-m", vcs).Output(); !strings.Contains(string(info), "vcs.revision=") {
		t.Skipf("the toolchain stamped no VCS revision here (a git worktree?):\n%s", info)
	}
	if out, err := execOutput(vcs, "-version"); err != nil || !strings.Contains(out, string(rev[:12])) {
		t.Errorf("-version of a VCS build: %q %v, want revision %s", out, err, rev[:12])
	}
}
