package tests

import "os/exec"

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
