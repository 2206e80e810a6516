package pluginrpc

import "github.com/reso-project/reso/plugins"

// Names of the host's capabilities as RoutesRequest.capabilities carries
// them: one per field of plugins.Services.
const (
	capSettings = "settings" // plugins.Settings
	capTree     = "tree"     // plugins.Tree
)

// capabilities names the services host offers.
func capabilities(host plugins.Services) [][]byte {
	var out []string
	if host.Settings != nil {
		out = append(out, capSettings)
	}
	if host.Tree != nil {
		out = append(out, capTree)
	}
	return wireList(out)
}
