//go:build !race

package tests

// raceEnabled says whether the test binary runs under the race detector:
// then TestMain builds reso with -race too, and a data race a server
// reports fails the test that started it (see checkRaces).
const raceEnabled = false
