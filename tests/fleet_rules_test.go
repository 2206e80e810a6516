package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFleetChannelRules: the first node of a fleet records the SHA-256 of
// its -channel-rules; a node with other rules refuses to start with one
// line naming both hashes, a node with the same rules (in another order,
// with comments) starts. Once no node runs, a node with new rules starts
// and they become the fleet's.
func TestFleetChannelRules(t *testing.T) {
	t.Parallel()
	// In the canonical text of the rules (docs/fleet.md §3), so the hash
	// of the file is the hash of the rules.
	const a = "/rooms self:cruds group:- auth:crs anon:r\n* self:cruds group:cruds auth:cruds anon:r\n"
	const same = "# the same rules, written otherwise\n*   anon:r auth:cruds group:cruds self:cruds\n/rooms  anon:r self:cruds auth:scr\n"
	const b = "/rooms self:cruds group:- auth:crs anon:-\n* self:cruds group:cruds auth:cruds anon:r\n"
	sha := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	dir := t.TempDir()
	for name, text := range map[string]string{"a.rules": a, "same.rules": same, "b.rules": b} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := startFleet(t, 1, "-channel-rules", filepath.Join(dir, "a.rules"))
	if !strings.Contains(f.node(0).Log(), "sha256="+sha(a)) {
		t.Fatalf("node 0 does not log the hash of its rules %s:\n%s", sha(a), f.node(0).Log())
	}
	node := func(rules string) []string {
		return []string{"-nats", f.nats.URLs(), "-fleet", f.name, "-fleet-heartbeat", fleetHeartbeat, "-channel-rules", filepath.Join(dir, rules)}
	}
	args := func(rules string) []string {
		return append([]string{"-addr", "127.0.0.1:0", "-db", ":memory:"}, node(rules)...)
	}
	_, errs, code := refusal(t, f.dir, args("b.rules")...)
	want := "reso: fleet " + f.name + " runs -channel-rules sha256 " + sha(a) + "; this node has " + sha(b)
	if code != 1 || !hasLine(errs, want) {
		t.Fatalf("a node with other rules: exit %d, want a line %q in:\n%s", code, want, errs)
	}
	if n := len(regexp.MustCompile(`(?m)^reso: `).FindAllString(errs, -1)); n != 1 {
		t.Errorf("%d lines of error, want 1:\n%s", n, errs)
	}

	s, err := startIn(t, f.dir, fleetMode, node("same.rules")...)
	if err != nil {
		t.Fatalf("a node with the same rules: %v", err)
	}
	s.stop()

	// The whole fleet stopped: after the heartbeat timeout, new rules are
	// the fleet's.
	f.node(0).stop()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err = startIn(t, f.dir, fleetMode, node("b.rules")...)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "runs -channel-rules sha256 "+sha(a)) {
			t.Fatalf("a node with new rules, no node running: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a node with new rules still refused 60 s after the fleet stopped: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer s.stop()
	_, errs, code = refusal(t, f.dir, args("a.rules")...)
	want = "reso: fleet " + f.name + " runs -channel-rules sha256 " + sha(b) + "; this node has " + sha(a)
	if code != 1 || !hasLine(errs, want) {
		t.Fatalf("the old rules after the change: exit %d, want a line %q in:\n%s", code, want, errs)
	}
}

// refusal runs reso with args in dir, expecting it to exit; it kills it
// after 60 s (a node that starts does not exit) and reports exit status -1.
func refusal(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(binary, args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	raceFree(t, e.String())
	if !timer.Stop() {
		return o.String(), e.String(), -1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// hasLine reports whether text has the line line.
func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}
