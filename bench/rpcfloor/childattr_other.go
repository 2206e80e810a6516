//go:build !linux

package main

import "syscall"

// childAttr is nil where the kernel cannot end a child with its parent.
func childAttr() *syscall.SysProcAttr { return nil }
