//go:build !unix

package pluginrpc

import "os/exec"

// socketDir makes no directory where go-plugin speaks TCP: a plugin
// process there has no socket file to leave behind.
func socketDir(*exec.Cmd) (string, error) { return "", nil }

// removeSockets has nothing to remove.
func removeSockets(string) {}
