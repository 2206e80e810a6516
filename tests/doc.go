// Package tests holds reso's black-box tests: they build ./cmd/reso, start
// it on a free loopback port in a temporary directory and speak only HTTP,
// WebSocket (and raw TCP, where status lines matter). Every test runs in
// each mode of [modes]: compiled in, and with every bundled plugin isolated
// in a child process (-isolate all; the channel's and the
// authenticator's suites isolate the plugins they reach), and the
// channel's suites on a fleet too. The tests
// run in parallel (go test's -parallel, the number of CPUs by default),
// each on servers, fleets, ports and directories of its own, except the
// tests that change nothing but resources of their own (uniq): those
// share one server per mode and kind (shared_test.go), never restarted,
// stopped when the binary ends. The two that count the test process's
// goroutines run first, alone.
//
// Under the race detector (go test -race, as .ci/run runs it) reso is
// built with -race too, and a data race that a server reports fails the
// test that started it (or used it, for a shared server); the race-built
// programs exit without the detector's second of sleep (GORACE
// atexit_sleep_ms=0, race.QuickExit), which every stop of a server, each
// of its plugin processes and every reso command run by a test paid
// before: half the suite's time. Every child a
// test starts (reso, nats-server, Node, the balancers, Chromium) is killed
// with the test binary on Linux, even when the binary is killed itself.
//
// Environment:
//   - RESO_TEST_MODES names the modes (names separated by commas):
//     compiled, isolated and fleet by default; fleet runs the channel's
//     suites on a three-node fleet (consecutive clients on different
//     nodes). The fleet's own tests run whatever the modes.
//   - The browser tests drive headless Chromium (chromedp). They skip when
//     no chromium binary is found, unless RESO_REQUIRE_BROWSER is set (as
//     .ci/run does), and RESO_CHROMIUM names the binary to use.
package tests
