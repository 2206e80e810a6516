package pluginrpc

import "github.com/reso-project/reso/plugins"

// Names of the host's capabilities as RoutesRequest.capabilities carries
// them: one per capability interface of plugins.Services.
const (
	capSettings = "settings" // plugins.Settings
	capTree     = "tree"     // plugins.Tree
)

// capabilities names the capability interfaces host implements.
func capabilities(host plugins.Services) [][]byte {
	var out []string
	if _, ok := host.(plugins.Settings); ok {
		out = append(out, capSettings)
	}
	if _, ok := host.(plugins.Tree); ok {
		out = append(out, capTree)
	}
	return wireList(out)
}
