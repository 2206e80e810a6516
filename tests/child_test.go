package tests

import "os/exec"

// childLeftEnv, in the environment of a test binary, names the reso
// binary it uses instead of building one, and lets
// TestNoChildLeftHelper (Linux) run.
const childLeftEnv = "RESO_TEST_CHILD_LEFT"

// command is exec.Command for a child that must not outlive the test
// binary: on Linux the child is killed when the binary dies, even by
// SIGKILL (go test's -timeout, a killed CI job), so no reso, nats-server,
// node or balancer is left behind (TestNoChildLeft checks it). A
// CommandContext sets cmd.SysProcAttr = childAttr() itself.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = childAttr()
	return cmd
}
