package jepsen

import "syscall"

// childAttr has a child process killed when the test process dies, so
// that no reso node outlives a test binary killed by a timeout.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
