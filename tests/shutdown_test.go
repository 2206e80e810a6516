package tests

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdown: SIGTERM and SIGINT stop the server cleanly (exit 0).
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			eachMode(t, func(t *testing.T, m mode) {
				s, err := startIn(t, t.TempDir(), m)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.get(t, "/config"); got.StatusLine != ok200 {
					t.Fatalf("%q", got.StatusLine)
				}
				s.cmd.Process.Signal(sig)
				select {
				case <-s.done:
				case <-time.After(15 * time.Second):
					s.kill()
					t.Fatal("no exit within 15 s")
				}
				if code := s.cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("exit code %d\n%s", code, s.Log())
				}
				if !strings.Contains(s.Log(), "reso shutting down") {
					t.Errorf("log:\n%s", s.Log())
				}
			})
		})
	}
}
