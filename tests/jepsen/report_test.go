package jepsen

import (
	"flag"
	"os"
	"testing"
	"time"
)

// histories writes every run's history and visualizations, not only
// those of runs with a violation (as go test -v does for TestShort).
var histories = flag.Bool("histories", false, "write every run's history and porcupine's visualization")

// sabotageEnv is the environment variable that turns the sabotage switch
// on for the runs of TestShort and TestCampaign: they must then fail.
const sabotageEnv = "RESO_JEPSEN_SABOTAGE"

// withSwitches returns cfg with the switches of the environment and of
// the test binary: sabotage when RESO_JEPSEN_SABOTAGE=1, every
// visualization and history written with -histories, the runs' progress
// logged to t.
func withSwitches(t *testing.T, cfg RunConfig) RunConfig {
	if os.Getenv(sabotageEnv) == "1" {
		cfg.Sabotage = true
	}
	cfg.Verbose = cfg.Verbose || *histories
	cfg.Logf = t.Logf
	return cfg
}

// report logs a run's figures and fails t on each violation (naming the
// model, the key and the visualization) and each problem.
func report(t *testing.T, res Result) {
	t.Helper()
	t.Logf("%s: %d operations (%.0f/s; register %d, create %d, stream %d), %d unknown, %d failed, %d faults, %d violations, seed %d",
		res.Label, res.Ops, res.OpsPerSecond(), res.OpsByModel[ModelRegister], res.OpsByModel[ModelCreate], res.OpsByModel[ModelStream],
		res.Unknown, res.Failed, len(res.Faults), len(res.Violations), res.Seed)
	for _, f := range res.Faults {
		ack := "no write acknowledged after it"
		if d, ok := f.ToFirstAck(); ok {
			ack = "first acknowledged write after " + d.Round(time.Millisecond).String()
		}
		t.Logf("  %s on %s at %.1f s, healed at %.1f s: %s %s", f.Kind, f.Target, float64(f.Inject)/1e9, float64(f.Heal)/1e9, ack, f.Err)
	}
	for _, s := range res.Sabotaged {
		t.Logf("  sabotage: %s", s)
	}
	for _, u := range res.Undecided {
		t.Logf("  porcupine did not decide %s", u)
	}
	for _, v := range res.Violations {
		t.Errorf("violation: %s", v)
	}
	for _, p := range res.Problems {
		t.Errorf("problem: %s", p)
	}
	if res.History != "" {
		t.Logf("  history: %s; subscribers and faults: %s", res.History, res.Streams)
	}
}
