package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallExample runs the two-party scenario of examples/call against a
// real server in each mode: it exits 0 only when every answer is what
// docs/call.md says.
func TestCallExample(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "callexample")
	build := exec.Command("go", "build", "-o", bin, "./examples/call")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/call: %v\n%s", err, out)
	}
	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := startRules(t, m)
		run := command(bin, "-addr", rs.Addr, "-alice", ann.email+":"+ann.password, "-bob", bob.email+":"+bob.password)
		out, err := run.CombinedOutput()
		if err != nil {
			t.Fatalf("examples/call: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "every answer is what docs/call.md says") {
			t.Errorf("examples/call said:\n%s", out)
		}
	})
}
