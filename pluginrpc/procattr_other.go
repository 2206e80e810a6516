//go:build !linux

package pluginrpc

import "os/exec"

// setParentDeathSignal does nothing outside Linux; the plugin watches its
// parent instead (see Serve).
func setParentDeathSignal(*exec.Cmd) {}
