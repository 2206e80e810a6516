package natstest

import "syscall"

// childAttr has a server killed when the test process dies, so that no
// server outlives a test binary killed by a timeout.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
