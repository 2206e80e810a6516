package jepsen

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The campaign's flags (after -args):
//
//	go test ./tests/jepsen -run TestCampaign -timeout 3h -args -campaign 30m -clients 12 -keys 4
var (
	campaignFor  = flag.Duration("campaign", 0, "run the campaign until its runs add up to this long (0: no campaign)")
	campaignRun  = flag.Duration("run-length", time.Minute, "the campaign: each run's length")
	campaignHold = flag.Duration("hold", 3*time.Second, "the campaign: how long a fault stays in force")
	campaignGap  = flag.Duration("quiet", 2*time.Second, "the campaign: the time between a heal and the next fault")
	clients      = flag.Int("clients", 12, "the campaign: register clients per run")
	keys         = flag.Int("keys", 4, "the campaign: register keys per run")
	campaignOut  = flag.String("campaign-out", "", "the campaign: also write the summary to this file")
	campaignOnly = flag.String("kinds", "", "the campaign: only these kinds of faults, comma-separated (\"mixed\": all of a fleet's at once)")
)

// campaignKinds are the kinds of faults of a Fleet, injected one at a
// time in the campaign before a run with all of them.
var campaignKinds = []Kind{
	KillNode, KillNATSLeader, KillNATSFollower, CutNodeDrop, CutNodeStall,
	CutNATSDrop, CutNATSStall, PauseNode, PauseNATSLeader, MoveLeader,
}

// TestCampaign is the long campaign (skipped without -campaign): runs of
// -run-length, each on a new fleet, one kind of fault after another, then
// every kind mixed, then one reso on SQLite killed with -9 (or the kinds
// of -kinds in turn), over and over until the runs add up to -campaign. It prints per kind of fault:
// runs, operations, operations per second, unknown outcomes, violations
// and the time from each fault to the first acknowledged write after it.
func TestCampaign(t *testing.T) {
	if *campaignFor <= 0 {
		t.Skip("no -campaign")
	}
	dir := OutputDir(t)
	var sum Summary
	var total time.Duration
	missed := 0 // runs in a row that did not run (their Env did not start)
	plan := make([][]Kind, 0, len(campaignKinds)+2)
	for _, k := range campaignKinds {
		plan = append(plan, []Kind{k})
	}
	plan = append(plan, campaignKinds, []Kind{KillSingle})
	if *campaignOnly != "" {
		plan = plan[:0]
		for _, k := range strings.Split(*campaignOnly, ",") {
			if k == "mixed" {
				plan = append(plan, campaignKinds)
			} else {
				plan = append(plan, []Kind{Kind(k)})
			}
		}
	}
	for i := 0; total < *campaignFor; i++ {
		kinds := plan[i%len(plan)]
		name := fmt.Sprintf("%03d-%s", i, kindsLabel(kinds))
		ran := false
		t.Run(name, func(t *testing.T) {
			var env Env
			if kinds[0] == KillSingle {
				env = StartSingle(t, SingleConfig{})
			} else {
				env = StartFleet(t, FleetConfig{})
			}
			res := Run(env, withSwitches(t, RunConfig{
				Kinds: kinds, Duration: *campaignRun, Hold: *campaignHold, Quiet: *campaignGap,
				Clients: *clients, Keys: *keys, Dir: dir,
			}))
			report(t, res)
			sum.Add(res)
			total += res.Duration
			ran = true
		})
		if missed = missed + 1; ran {
			missed = 0
		}
		if missed == 3 {
			t.Fatal("three runs in a row did not run")
		}
	}
	var b strings.Builder
	sum.Write(&b)
	fmt.Printf("campaign: %v of runs; histories in %s\n%s", total.Round(time.Second), dir, b.String())
	if *campaignOut != "" {
		if err := os.WriteFile(*campaignOut, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// kindsLabel names kinds for a subtest: the kind, or "mixed".
func kindsLabel(kinds []Kind) string {
	if len(kinds) == 1 {
		return string(kinds[0])
	}
	return "mixed"
}
