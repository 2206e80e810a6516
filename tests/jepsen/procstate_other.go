//go:build !linux

package jepsen

// procState returns "": only Linux tells a process's state here.
func procState(pid int) string { return "" }

// canSeeState says whether procState tells the state of a process.
const canSeeState = false
