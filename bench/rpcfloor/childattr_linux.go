package main

import "syscall"

// childAttr has the peer killed when the relay dies, so that none
// outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
