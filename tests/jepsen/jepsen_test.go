package jepsen

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestShort is the short run of go test (skipped with -short): a fleet
// under a mix of every kind of fault for 50 s, then one reso on SQLite
// killed with -9 again and again for 25 s. Any violation fails it, named
// with its key and the visualization written (under -v, or with
// -histories, every run's history and visualization are written).
func TestShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the history checks take a minute and a half")
	}
	dir := OutputDir(t)
	var sum Summary
	t.Run("fleet", func(t *testing.T) {
		f := StartFleet(t, FleetConfig{})
		// Faults held 2 s, 1.5 s apart: most kinds come once in 50 s
		// (a killed nats-server takes seconds to come back).
		res := Run(f, withSwitches(t, RunConfig{Duration: 50 * time.Second, Hold: 2 * time.Second, Quiet: 1500 * time.Millisecond,
			Dir: dir, Verbose: testing.Verbose()}))
		report(t, res)
		sum.Add(res)
	})
	t.Run("single", func(t *testing.T) {
		s := StartSingle(t, SingleConfig{})
		res := Run(s, withSwitches(t, RunConfig{Kinds: []Kind{KillSingle}, Duration: 25 * time.Second, Dir: dir, Verbose: testing.Verbose()}))
		report(t, res)
		sum.Add(res)
	})
	var b strings.Builder
	sum.Write(&b)
	t.Logf("summary:\n%s", b.String())
}

// TestSabotageRun runs one reso twice the same way, without faults: with the
// sabotage switch off every check passes; with it on, each model's check
// fails (the register, create-if-absent and the stream).
func TestSabotageRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs reso for 12 s")
	}
	dir := OutputDir(t)
	s := StartSingle(t, SingleConfig{})
	for _, sabotage := range []bool{false, true} {
		cfg := RunConfig{NoFaults: true, Duration: 6 * time.Second, Sabotage: sabotage, Dir: dir, Logf: t.Logf}
		res := Run(s, cfg)
		if len(res.Problems) > 0 {
			t.Errorf("sabotage %v: problems %v", sabotage, res.Problems)
		}
		if !sabotage {
			for _, v := range res.Violations {
				t.Errorf("without sabotage: %s", v)
			}
			continue
		}
		t.Logf("sabotaged: %v", res.Sabotaged)
		for _, m := range []string{ModelRegister, ModelCreate, ModelStream} {
			if !slices.ContainsFunc(res.Violations, func(v Violation) bool { return v.Model == m }) {
				t.Errorf("with sabotage, the %s check passed (violations %v)", m, res.Violations)
			}
		}
		if res.History == "" {
			t.Errorf("with sabotage, no history written")
		}
	}
}
