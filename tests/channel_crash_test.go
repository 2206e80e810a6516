package tests

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestChannelPluginCrash: with the channel plugin in a process of its own
// (-isolate all), kill -9 of that process ends its WebSocket connections,
// and the transient resources they owned are gone once the plugin is back
// (the tree is the host's, which releases a session's resources whatever
// became of the plugin); persistent ones stay (issue 9, lifecycle).
func TestChannelPluginCrash(t *testing.T) {
	t.Parallel()
	cs := startChannel(t, isolatedMode)
	var pid int
	for _, p := range children(t, cs.cmd.Process.Pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(b, []byte("plugin\x00channel")) {
			pid = p
		}
	}
	if pid == 0 {
		t.Fatal("no channel plugin process")
	}
	root := "/" + uniq("crash-")
	R := jsonString(root)
	g := clients(t, cs)
	a := g.dial("$A")
	a.call(`{"method":"PUT","resource":"` + root + `/t","entity":1,"msg_id":1}`)
	a.call(`{"method":"PUT","resource":"` + root + `/k","entity":2,"persistent":true,"msg_id":2}`)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, reason := a.closed()
	t.Logf("the connection ended: %d %q", code, reason)

	want := `{"msg_id":3,"code":"success","resource":` + R + `,"type":"application/json","entity":["k"]}`
	// Until the plugin is back, handshakes may fail and connections may
	// end at once.
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		got := ""
		b, _, err := g.dialRaw(wsOptions{})
		if err == nil {
			b.label = "$B"
			b.startReading()
			got, err = b.tryCall(`{"method":"GET","resource":` + R + `,"msg_id":3}`)
			b.close()
		}
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the crash: %s %v, want %s", got, err, want)
		}
	}
}
