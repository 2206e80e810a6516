package pluginrpc

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the plugin process when the
// host dies, even by SIGKILL.
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
