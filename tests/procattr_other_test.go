//go:build !linux

package tests

import "syscall"

// childAttr is nil: only Linux kills a child when its parent dies.
func childAttr() *syscall.SysProcAttr { return nil }
