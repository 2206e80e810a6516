package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest/freeport"
	"github.com/reso-project/reso/internal/race"
)

// binary is the reso binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reso-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "reso")
	// Servers keep their default state (the login database, the secret)
	// here, never in the home directory of whoever runs the tests.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	race.QuickExit()
	if _, err := modesFrom(os.Getenv("RESO_TEST_MODES")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	if bin := os.Getenv(childLeftEnv); bin != "" {
		// A test binary that TestNoChildLeft runs: its reso is built.
		binary = bin
	} else {
		build := exec.Command("go", append(append([]string{"build"}, race.BuildFlags()...), "-o", binary, "../cmd/reso")...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building reso:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if !stopShared() {
		code = 1
	}
	stopNATS()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mode is a way of running the bundled plugins.
type mode struct {
	name string
	args []string
}

// isolating returns m with only the bundled plugins names (separated by
// commas) in child processes when m isolates them all, m unchanged
// otherwise.
func (m mode) isolating(names string) mode {
	if !slices.Equal(m.args, isolatedMode.args) {
		return m
	}
	return mode{name: m.name, args: []string{"-isolate", names}}
}

// allModes are the ways every black-box test runs.
var allModes = []mode{{name: "compiled"}, isolatedMode}

// modes returns the modes named by RESO_TEST_MODES (names separated by
// commas; every known mode when unset: the two plugin modes, and the
// fleet, which only the channel's and the call plugin's suites run, see
// eachChannelMode).
// TestMain has checked the value.
func modes() []mode {
	ms, _ := modesFrom(os.Getenv("RESO_TEST_MODES"))
	return ms
}

// knownModes are the modes RESO_TEST_MODES may name: the plugin modes
// and the fleet (which only the channel's and the call plugin's suites
// run).
var knownModes = append(slices.Clone(allModes), fleetMode)

// modesFrom resolves a RESO_TEST_MODES value; an unknown name is an error
// that names the valid ones.
func modesFrom(want string) ([]mode, error) {
	if strings.TrimSpace(want) == "" {
		return knownModes, nil
	}
	var out []mode
	for _, name := range strings.Split(want, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(knownModes, func(m mode) bool { return m.name == name })
		if i < 0 {
			return nil, fmt.Errorf("RESO_TEST_MODES=%q: unknown mode %q (valid: compiled, isolated, fleet, separated by commas)", want, name)
		}
		out = append(out, knownModes[i])
	}
	return out, nil
}

// pluginModes returns the plugin modes among modes(): all but the fleet.
func pluginModes() []mode {
	return slices.DeleteFunc(slices.Clone(modes()), func(m mode) bool { return m.name == fleetMode.name })
}

// eachMode runs f as a subtest per plugin mode.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	t.Helper()
	for _, m := range pluginModes() {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

// eachChannelMode runs f as a subtest per plugin mode and on a fleet
// (fleetMode): the channel's and the call plugin's suites, whose every
// assertion must also hold when consecutive clients of a test talk to
// different nodes.
func eachChannelMode(t *testing.T, f func(t *testing.T, m mode)) {
	t.Helper()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

// server is a running reso.
type server struct {
	Addr string // host:port
	URL  string // http://host:port
	Dir  string // working directory
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	// wait bounds the answer to one request of do (0: 10 s).
	wait time.Duration
	// test names the test that started the server; reported is how many
	// data races of its log a test has reported (see checkRaces).
	test     string
	reported int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listenRe finds the listening address in the log, text or JSON
// (-log-format json).
var listenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)|"msg":"reso listening","addr":"([^"]+)"`)

// startIn starts reso in dir with the mode's and the given flags, on a free
// loopback port, and waits until it listens. -db defaults to :memory:.
func startIn(t testing.TB, dir string, m mode, args ...string) (*server, error) {
	return startWith(t, dir, m, launch{}, args...)
}

// launch holds the less common ways of starting a server.
type launch struct {
	// env is added to the environment of the server.
	env []string
	// stateDB leaves -db to the server's default (in the state directory)
	// instead of :memory:.
	stateDB bool
	// binary is the program to start instead of the reso binary.
	binary string
}

// listenWait bounds a server's start, a hang guard: a race-built reso
// whose plugins all run isolated (nine race-built processes) takes well
// over 20 s to listen on a loaded two-core machine.
const listenWait = 2 * time.Minute

// startWith is startIn with launch options. A data race the server
// reports fails t (see checkRaces).
func startWith(t testing.TB, dir string, m mode, l launch, args ...string) (*server, error) {
	all := append([]string{"-addr", "127.0.0.1:0"}, m.args...)
	hasDB := l.stateDB
	for _, a := range args {
		if a == "-db" || strings.HasPrefix(a, "-db=") {
			hasDB = true
		}
	}
	if !hasDB {
		all = append(all, "-db", ":memory:")
	}
	all = append(all, args...)
	bin := binary
	if l.binary != "" {
		bin = l.binary
	}
	cmd := command(bin, all...)
	cmd.Dir = dir
	if l.env != nil {
		cmd.Env = append(os.Environ(), l.env...)
	}
	s := &server{Dir: dir, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{}), test: t.Name()}
	cmd.Stderr = s.log
	cmd.Stdout = s.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	watchRaces(t, s)
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.After(listenWait)
	for {
		if m := listenRe.FindStringSubmatch(s.log.String()); m != nil {
			s.Addr = m[1] + m[2]
			s.URL = "http://" + s.Addr
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("reso exited before listening:\n%s", s.log.String())
		case <-deadline:
			s.kill()
			return nil, fmt.Errorf("reso did not listen within %v:\n%s", listenWait, s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// start starts a server of its own for t in a new temporary directory
// holding the standard fixture files, and stops it when t ends.
func start(t *testing.T, m mode, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	writeFixtures(t, dir)
	s, err := startIn(t, dir, m, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("server log:\n%s", s.log.String())
		}
	})
	return s
}

// stop ends the server with SIGTERM and waits, killing it after 10 s.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.kill()
	}
}

func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Log returns what the server wrote so far.
func (s *server) Log() string { return s.log.String() }

// Fixture files of every test directory.
const (
	fixtureHello = "hello, world\n"
	fixtureData  = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// fixtureTime is the modification time of every fixture entry.
var fixtureTime = time.Unix(1700000000, 0)

// writeFixtures lays out:
//
//	hello.txt          "hello, world\n"
//	sub/data.bin       36 bytes
//	sub/deeper/        empty directory
//	outside-link       symlink to / (leaves the directory; never listed)
//	dangling           symlink to a missing file (never listed)
//	inside-link        symlink to hello.txt (listed as a file)
func writeFixtures(t testing.TB, dir string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(fixtureHello), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "data.bin"), []byte(fixtureData), 0o644))
	must(os.Symlink("/", filepath.Join(dir, "outside-link")))
	must(os.Symlink("missing-target", filepath.Join(dir, "dangling")))
	must(os.Symlink("hello.txt", filepath.Join(dir, "inside-link")))
	for _, p := range []string{"hello.txt", "sub/data.bin", "sub/deeper", "sub"} {
		must(os.Chtimes(filepath.Join(dir, p), fixtureTime, fixtureTime))
	}
}

// response is an answer read off a raw connection.
type response struct {
	StatusLine string // "HTTP/1.1 400 Invalid Path"
	Header     http.Header
	Body       string
}

// raw sends the request text on a new TCP connection and reads one answer.
func raw(t *testing.T, addr, request string) response {
	t.Helper()
	return rawWithin(t, addr, request, 0)
}

// rawWithin is raw with wait as the bound of the answer (0: 10 s).
func rawWithin(t testing.TB, addr, request string, wait time.Duration) response {
	t.Helper()
	if wait <= 0 {
		wait = 10 * time.Second
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, bufio.NewReader(c), strings.HasPrefix(request, "HEAD "))
}

// readResponse reads one HTTP/1.1 answer and returns its exact status line.
func readResponse(t testing.TB, br *bufio.Reader, head bool) response {
	t.Helper()
	line, err := peekLine(br)
	if err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	var req *http.Request
	if head {
		req = &http.Request{Method: "HEAD"}
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return response{StatusLine: strings.TrimRight(line, "\r\n"), Header: resp.Header, Body: string(body)}
}

// peekLine returns the first line buffered in br without consuming it.
func peekLine(br *bufio.Reader) (string, error) {
	for n := 1; ; n = br.Buffered() + 1 {
		if _, err := br.Peek(n); err != nil {
			return "", err
		}
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return string(buf[:i+1]), nil
		}
	}
}

// get sends "GET target" over a raw connection.
func (s *server) get(t testing.TB, target string, headers ...string) response {
	t.Helper()
	return s.do(t, "GET", target, "", headers...)
}

// do sends a request with an optional body (Content-Length is added when
// body is not empty) over a raw connection.
func (s *server) do(t testing.TB, method, target, body string, headers ...string) response {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, s.Addr)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	return rawWithin(t, s.Addr, b.String(), s.wait)
}

// client is an http.Client for helper calls that need no exact status line.
var client = &http.Client{Timeout: 30 * time.Second}

// ctx returns a context that ends with t.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return c
}

// freePort returns a loopback port free now that nothing but a listener
// naming it takes (natstest/freeport): for a server started again on the
// same address after a kill -9, or a configuration that names its port.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	return p[0]
}
