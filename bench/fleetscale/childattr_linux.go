package main

import "syscall"

// childAttr has a load client killed when the bench dies, so that none
// outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
