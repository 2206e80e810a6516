//go:build race

package jepsen

// raceEnabled says whether the test binary runs under the race detector:
// then BuildReso builds reso with -race too.
const raceEnabled = true
