package jepsen

import (
	"flag"
	"testing"
	"time"
)

// recheck names a history file for TestRecheck.
var recheck = flag.String("recheck", "", "check this history file (history.jsonl of a run) again")

// TestRecheck checks a history written by an earlier run again (skipped
// without -recheck) and says where each refused key's longest
// linearization gets stuck:
//
//	go test ./tests/jepsen -run TestRecheck -v -args -recheck /tmp/reso-jepsen-.../history.jsonl
func TestRecheck(t *testing.T) {
	if *recheck == "" {
		t.Skip("no -recheck")
	}
	ops, err := ReadHistory(*recheck)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Check(ops, OutputDir(t), 5*time.Minute) {
		t.Errorf("violation: %s", v)
	}
}
