package race

import (
	"os"
	"strings"
)

// BuildFlags returns the go build flags that match this binary's race
// detector: {"-race"} under it, none otherwise.
func BuildFlags() []string {
	if Enabled {
		return []string{"-race"}
	}
	return nil
}

// quickExit is the detector's option that ends a program at once: by
// default a race-built program sleeps a second before it exits (so that
// goroutines still running may report), which a test suite starting
// hundreds of servers, each with plugin processes, pays at every stop.
const quickExit = "atexit_sleep_ms=0"

// QuickExit makes the race-built programs this process starts from now
// on exit without the detector's second of sleep, keeping any other
// GORACE option set. A race found before the exit is reported as
// before; one a goroutine would have found in that last second is not,
// as in a program built without the detector.
func QuickExit() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms=") {
		return // the caller's choice
	}
	os.Setenv("GORACE", strings.TrimSpace(v+" "+quickExit))
}
