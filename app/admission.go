package app

import (
	"net/http"
	"time"

	"github.com/reso-project/reso/channel/fleet"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware"
)

// errBehind answers a WebSocket handshake or a GET kept open while the
// node is behind the fleet's log (-fleet-max-lag).
var errBehind = core.Status(http.StatusServiceUnavailable, "Behind the Log")

// Behind is the current membership's [fleet.Fleet.Behind]: the rule of
// its readiness about the log, and of the admission of new connections.
func (m *fleetMember) Behind() error { return m.cur.Load().fl.Behind() }

// Lag is the current membership's [fleet.Fleet.Lag].
func (m *fleetMember) Lag() time.Duration { return m.cur.Load().fl.Lag() }

// admission returns the middleware that refuses new long-lived
// connections while the node is behind the log (docs/fleet.md#overload):
// 503 Behind the Log at once, with Retry-After of -fleet-max-lag (at
// least a second). The connections open stay.
func (m *fleetMember) admission(cfg *fleetOptions) func(http.Handler) http.Handler {
	lag := cfg.maxLag
	if lag <= 0 {
		lag = fleet.DefaultMaxLag
	}
	return middleware.Admit(func() error {
		if m.Behind() != nil {
			return errBehind
		}
		return nil
	}, lag)
}
