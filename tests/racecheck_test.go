package tests

import (
	"strings"
	"sync"
	"testing"
)

// Under the race detector (race.Enabled) the black-box tests run a reso
// built with -race, and every report it writes fails a test: the one that
// started the server, or the ones that used a shared server, or, for a
// report after the tests ended, the whole run.

// raceMark starts what the race detector writes when it finds a race;
// raceEnd ends the report.
const (
	raceMark = "WARNING: DATA RACE"
	raceEnd  = "=================="
)

// racesMu guards the servers' reported counts.
var racesMu sync.Mutex

// watchRaces has the end of t check s's log for data races (s is stopped
// by then; a shared server's t is its lasting, which ends at stopShared).
func watchRaces(t testing.TB, s *server) {
	t.Cleanup(func() { s.checkRaces(t) })
}

// checkRaces fails t with the data races s reported that no test
// reported yet.
func (s *server) checkRaces(t testing.TB) {
	t.Helper()
	if reports := s.newRaces(); len(reports) > 0 {
		t.Errorf("reso (%s, started by %s) reported %d data race(s):\n%s", s.Addr, s.test, len(reports), strings.Join(reports, "\n"))
	}
}

// newRaces returns the reports of s's log that no test reported yet, and
// counts them as reported.
func (s *server) newRaces() []string {
	reports := raceReports(s.log.String())
	racesMu.Lock()
	defer racesMu.Unlock()
	if len(reports) <= s.reported {
		return nil
	}
	fresh := reports[s.reported:]
	s.reported = len(reports)
	return fresh
}

// raceReports returns the data race reports in a program's output.
func raceReports(out string) []string {
	var reports []string
	for {
		i := strings.Index(out, raceMark)
		if i < 0 {
			return reports
		}
		out = out[i:]
		end := strings.Index(out, raceEnd)
		if end < 0 {
			end = len(out)
		}
		reports = append(reports, out[:end])
		out = out[end:]
	}
}

// raceFree fails t when the output of a reso it ran reports a data race.
func raceFree(t testing.TB, out string) {
	t.Helper()
	if reports := raceReports(out); len(reports) > 0 {
		t.Errorf("reso reported %d data race(s):\n%s", len(reports), strings.Join(reports, "\n"))
	}
}

// TestRaceReports: the reports are cut out of a log, whole, and counted.
func TestRaceReports(t *testing.T) {
	t.Parallel()
	report := func(addr string) string {
		return "==================\n" + raceMark + "\nWrite at " + addr + " by goroutine 7:\n  main.f()\n"
	}
	log := "time=1 msg=start\n" + report("0x1") + "==================\nmsg=between\n" + report("0x2") + "==================\n"
	got := raceReports(log)
	if len(got) != 2 || !strings.Contains(got[0], "0x1") || !strings.Contains(got[1], "0x2") || strings.Contains(got[0], "between") {
		t.Fatalf("%q, want the two reports", got)
	}
	if got := raceReports("time=1 msg=start\n"); got != nil {
		t.Fatalf("%q in a log without a race", got)
	}
	s := &server{log: &syncBuffer{}}
	s.log.Write([]byte(log))
	if n := len(s.newRaces()); n != 2 {
		t.Fatalf("%d new races, want 2", n)
	}
	s.log.Write([]byte(report("0x3")))
	if got := s.newRaces(); len(got) != 1 || !strings.Contains(got[0], "0x3") {
		t.Fatalf("%q, want only the third report", got)
	}
}
