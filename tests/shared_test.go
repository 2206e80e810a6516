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
	sharedMu    sync.Mutex
	sharedLives []*lasting             // in start order
	sharedApps  = map[string]*server{} // by mode name
	sharedChans = map[string]*sharedChan{}
)

// sharedChan is a shared channel server, or why it could not start.
type sharedChan struct {
	rs  *rulesServer // a channel server of the rules' tests, or one without adminCookie
	err error
}

// shared returns a server for mode m shared by the tests that do not change
// its state (no PUT /config, no logins that matter to others), started on
// first use in a directory with the standard fixtures.
func shared(t *testing.T, m mode) *server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	s := sharedApps[m.name]
	if s == nil {
		l := newLasting(t)
		if err := l.do(func() { s = launchShared(l, m) }); err != nil {
			t.Fatal(err)
		}
		sharedApps[m.name] = s
	}
	t.Cleanup(func() { s.checkRaces(t) })
	return s
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
// started by start on first use.
func sharedServer(t *testing.T, kind string, m mode, start func(l *lasting) *rulesServer) *rulesServer {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	key := kind + "/" + m.name
	sc := sharedChans[key]
	if sc == nil {
		sc = &sharedChan{}
		l := newLasting(t)
		sc.err = l.do(func() { sc.rs = start(l) })
		sharedChans[key] = sc
	}
	if sc.err != nil {
		t.Fatalf("the shared %s server of the %s mode did not start: %v", kind, m.name, sc.err)
	}
	cs := *sc.rs.chanServer
	cs.t, cs.shared = t, true
	for _, s := range cs.processes() {
		t.Cleanup(func() { s.checkRaces(t) })
	}
	return &rulesServer{chanServer: &cs, adminCookie: sc.rs.adminCookie}
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

// sharedProcesses returns the reso processes of the shared servers.
func sharedProcesses() []*server {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var all []*server
	for _, s := range sharedApps {
		all = append(all, s)
	}
	for _, sc := range sharedChans {
		if sc.rs != nil {
			all = append(all, sc.rs.processes()...)
		}
	}
	return all
}

// stopShared stops the shared servers, the last started first, and
// reports whether they stopped without a failure.
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
