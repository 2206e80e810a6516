package tests

import "os/exec"

// execOutput runs a command and returns its standard output.
func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}
