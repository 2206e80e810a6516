package tests

import (
	"strings"
	"testing"
	"time"
)

// TestPluginLogRecord: a plugin's log line (examples/hello-plugin logs with
// log/slog's text handler on stderr) reaches the server's log as one record
// with the plugin's name and its own message, not as a message that quotes
// the plugin's whole line.
func TestPluginLogRecord(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	s := start(t, isolatedMode, "-plugin", "hello="+hello)
	// The plugin's stderr is copied as it comes: wait for the line.
	var line string
	for deadline := time.Now().Add(10 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(s.Log(), "\n") {
			if strings.Contains(l, "hello-plugin ready") {
				line = l
			}
		}
	}
	if !strings.Contains(line, ` level=INFO msg="hello-plugin ready" plugin=hello`) || strings.Contains(line, `msg="time=`) {
		t.Errorf("the plugin's record in the log: %q, want one record level=INFO msg=\"hello-plugin ready\" plugin=hello", line)
	}
}
