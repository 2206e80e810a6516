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
// (-isolate all), kill -9 of that process does not end the connections of
// its WebSocket door: the host serves them itself, on its own tree
// (docs/plugins.md, "The door's sessions are served by the host"), so a
// connection goes on, with its transient resource, while the plugin is
// restarted and after; once it closes, its transient resources are gone
// and the persistent ones stay (issue 9, lifecycle; issue 38).
func TestChannelPluginCrash(t *testing.T) {
	t.Parallel()
	cs := startChannel(t, isolatedMode)
	pid := channelPluginPID(t, cs)
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
	both := `{"msg_id":3,"code":"success","resource":` + R + `,"type":"application/json","entity":["t","k"]}`
	if got := a.call(`{"method":"GET","resource":` + R + `,"msg_id":3}`); got != both {
		t.Fatalf("$A after the kill: %s, want %s", got, both)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		if p := channelPluginPID(t, cs); p != 0 && p != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the channel plugin was not restarted")
		}
	}
	if got := a.call(`{"method":"GET","resource":` + R + `,"msg_id":3}`); got != both {
		t.Fatalf("$A after the restart: %s, want %s", got, both)
	}
	a.closeNormal()

	want := `{"msg_id":4,"code":"success","resource":` + R + `,"type":"application/json","entity":["k"]}`
	b := g.dial("$B")
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		got := b.call(`{"method":"GET","resource":` + R + `,"msg_id":4}`)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after $A closed: %s, want %s", got, want)
		}
	}
}

// channelPluginPID returns the pid of the channel plugin's process of
// cs's server, 0 when there is none.
func channelPluginPID(t *testing.T, cs *chanServer) int {
	t.Helper()
	for _, p := range children(t, cs.cmd.Process.Pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(b, []byte("plugin\x00channel")) {
			return p
		}
	}
	return 0
}
