package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// The servers that tests share: one per mode and kind, started by the
// first test that asks and stopped by TestMain, for the tests that change
// nothing of a server but what they create under names of their own
// (uniq). Starting and stopping a race-built reso costs about
// 0.25 CPU-seconds, 1.4 with the plugin processes of channelIsolated, and
// a fleet of three nodes about 2 with its streams on the NATS cluster:
// a server of its own for every test and mode was a fifth of the
// black-box tests' CPU on two cores.
var (
	sharedMu      sync.Mutex
	sharedLives   []*lasting // in start order
	sharedServers = map[string]*sharedStart{}
)

// sharedStart is a shared server (a plain one, a channel server, or a
// rules server with its administrator's cookie), or why it could not
// start.
type sharedStart struct {
	rs  *rulesServer
	err error
}

// shared returns a server for mode m shared by the tests that do not change
// its state (no PUT /config, no logins that matter to others), started on
// first use in a directory with the standard fixtures.
func shared(t *testing.T, m mode) *server {
	t.Helper()
	return sharedServer(t, "app", m, func(l *lasting) *rulesServer {
		return &rulesServer{chanServer: &chanServer{server: launchShared(l, m), m: m}}
	}).server
}

// sharedChannel returns the channel server of mode m that the tests
// which only use resources of their own share: startChannel's with no
// flags of the test's, never restarted (chanServer.restart fails the
// test). In the fleet mode it is a fleet of its own on the shared NATS
// cluster.
func sharedChannel(t *testing.T, m mode) *chanServer {
	t.Helper()
	return sharedServer(t, "channel", m, func(l *lasting) *rulesServer {
		if m.name == fleetMode.name {
			f := startFleetOn(l, sharedNATS(l), fleetNodes)
			return &rulesServer{chanServer: &chanServer{server: f.front(), m: m, fleet: f}}
		}
		db := filepath.Join(l.TempDir(), "reso.db")
		cs := &chanServer{m: m.isolating(channelIsolated), args: []string{"-db", db}, DB: db}
		cs.server = launchShared(l, cs.m, cs.args...)
		return &rulesServer{chanServer: cs}
	}).chanServer
}

// sharedServer returns the shared server of kind and mode m for t,
// started by start on first use. A data race its processes report fails
// the tests that use it, at their end, and the test binary when the
// server stops (the lasting's cleanups).
func sharedServer(t *testing.T, kind string, m mode, start func(l *lasting) *rulesServer) *rulesServer {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	key := kind + "/" + m.name
	ss := sharedServers[key]
	if ss == nil {
		ss = &sharedStart{}
		l := newLasting(t)
		ss.err = l.do(func() { ss.rs = start(l) })
		sharedServers[key] = ss
	}
	if ss.err != nil {
		t.Fatalf("the shared %s server of the %s mode did not start: %v", kind, m.name, ss.err)
	}
	cs := *ss.rs.chanServer
	cs.t, cs.shared = t, true
	for _, s := range cs.processes() {
		t.Cleanup(func() { s.checkRaces(t) })
	}
	return &rulesServer{chanServer: &cs, adminCookie: ss.rs.adminCookie}
}

// launchShared starts a server for l in a directory of its own with the
// standard fixtures, in mode m with the given flags.
func launchShared(l *lasting, m mode, args ...string) *server {
	dir := l.TempDir()
	writeFixtures(l, dir)
	s, err := startIn(l, dir, m, args...)
	if err != nil {
		l.Fatal(err)
	}
	l.Cleanup(s.stop)
	return s
}

// stopShared stops the shared servers, the last started first, and
// reports whether they stopped without a failure: a data race a server
// reported after its last test's end is one (watchRaces, which startIn
// registers with the lasting, runs after the server stopped).
func stopShared() bool {
	sharedMu.Lock()
	lives := slices.Clone(sharedLives)
	sharedMu.Unlock()
	ok := true
	for _, l := range slices.Backward(lives) {
		if !l.stop() {
			ok = false
		}
	}
	return ok
}

// lasting is the testing.TB of what outlives the test that starts it (a
// shared server): its cleanups run at stopShared, the last registered
// first; its temporary directories are removed then; a failure while it
// starts (do) ends the start; what it logs goes to the standard error.
type lasting struct {
	// TB is nil: it is here for the unexported method of testing.TB;
	// lasting defines every method the harness calls.
	testing.TB
	name string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// newLasting returns a lasting named for the test t that starts it, and
// registers it for stopShared. The caller holds sharedMu.
func newLasting(t *testing.T) *lasting {
	l := &lasting{name: "shared by " + t.Name()}
	sharedLives = append(sharedLives, l)
	return l
}

// fatal is the panic of lasting's Fatal, which do recovers.
type fatal struct{ msg string }

// do runs start and returns the failure that ended it, if any; the
// cleanups it registered then run at once.
func (l *lasting) do(start func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(fatal)
		if !ok {
			panic(r)
		}
		l.stop()
		err = fmt.Errorf("%s", f.msg)
	}()
	start()
	return nil
}

// stop runs the cleanups, the last registered first, and reports whether
// nothing failed.
func (l *lasting) stop() bool {
	l.mu.Lock()
	fs := l.cleanups
	l.cleanups = nil
	l.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
	return !l.Failed()
}

func (l *lasting) Helper()      {}
func (l *lasting) Name() string { return l.name }

func (l *lasting) Cleanup(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

func (l *lasting) TempDir() string {
	dir, err := os.MkdirTemp("", "reso-shared-")
	if err != nil {
		l.Fatal(err)
	}
	l.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (l *lasting) Failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *lasting) Log(args ...any) { fmt.Fprintln(os.Stderr, l.name+": "+fmt.Sprint(args...)) }

func (l *lasting) Logf(format string, args ...any) { l.Log(fmt.Sprintf(format, args...)) }

func (l *lasting) Errorf(format string, args ...any) {
	l.mu.Lock()
	l.failed = true
	l.mu.Unlock()
	l.Logf(format, args...)
}

func (l *lasting) Fatal(args ...any) { panic(fatal{fmt.Sprint(args...)}) }

func (l *lasting) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }
