//go:build !linux

package natstest

// ProcState returns "": only Linux tells a process's state here.
func ProcState(pid int) string { return "" }

// CanSeeState says whether ProcState tells the state of a process.
const CanSeeState = false
