package pluginrpc

import "github.com/reso-project/reso/plugins"

// Names of the host's capabilities as RoutesRequest.capabilities carries
// them: one per field of plugins.Services.
const (
	capSettings = "settings" // plugins.Settings
	capTree     = "tree"     // plugins.Tree
	// capWatch is not a service of its own: the host runs GETs kept
	// open of its tree for the plugin (Host.Watch, watch.go).
	capWatch = "watch"
	// capDoor is not a service either: the host serves the sessions of
	// a door route onto its tree itself (Route.door, door.go).
	capDoor = "door"
)

// capabilities names the services host offers, and whether the host runs
// watches of its tree (with Config.Watch set) and serves door routes
// (with Config.Door set).
func capabilities(host plugins.Services, watch, door bool) [][]byte {
	var out []string
	if host.Settings != nil {
		out = append(out, capSettings)
	}
	if host.Tree != nil {
		out = append(out, capTree)
		if watch {
			out = append(out, capWatch)
		}
		if door {
			out = append(out, capDoor)
		}
	}
	return wireList(out)
}
