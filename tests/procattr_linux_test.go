package tests

import "syscall"

// childAttr has a child killed when the test binary dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
