package app

import (
	"net/http"

	"github.com/reso-project/reso/channel/fleet"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware"
)

// errBehind answers a WebSocket handshake or a GET kept open while the
// node is behind the fleet's log (-fleet-max-lag).
var errBehind = core.Status(http.StatusServiceUnavailable, "Behind the Log")

// admission returns the middleware that refuses new long-lived
// connections while the node is behind the log (docs/fleet.md#overload):
// 503 Behind the Log at once, with Retry-After of -fleet-max-lag (at
// least a second). The connections open stay.
// The rule is the current membership's [fleet.Fleet.Behind], that of its
// readiness about the log too.
func admission(m *fleet.Member, cfg *fleetOptions) func(http.Handler) http.Handler {
	lag := cfg.maxLag
	if lag <= 0 {
		lag = fleet.DefaultMaxLag
	}
	return middleware.Admit(func() error {
		if m.Fleet().Behind() != nil {
			return errBehind
		}
		return nil
	}, lag)
}
