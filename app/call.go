package app

import (
	"flag"
	"time"

	"github.com/reso-project/reso/plugins/call"
)

// callOptions are the flags of the call-control plugin (docs/call.md#flags),
// passed to it as settings.
type callOptions struct {
	maxExpires time.Duration
	wait       time.Duration
	waitCount  int
	waitBytes  int
}

// callFlags declares the call-control flags on fs.
func callFlags(fs *flag.FlagSet, c *callOptions) {
	c.maxExpires = call.DefaultMaxExpires
	fs.Var(durationFlag{&c.maxExpires}, "call-max-expires", "longest lifetime a call-control contact, call or participant may ask for (longer ones are lowered to it)")
	c.wait = call.DefaultWait
	fs.Var(durationFlag{&c.wait}, "call-wait", "how long an invitation (SEND) that no session has taken waits")
	fs.IntVar(&c.waitCount, "call-wait-count", call.DefaultWaitCount, "most invitations waiting for one user (503 Too Many Waiting Messages past it)")
	fs.IntVar(&c.waitBytes, "call-wait-bytes", call.DefaultWaitBytes, "most bytes of invitations waiting for one user (503 Waiting Messages Too Large past it)")
}

// validate checks the call-control flags.
func (c *callOptions) validate() error {
	if c.maxExpires < time.Second || c.wait <= 0 {
		return usagef("-call-max-expires must be at least 1s and -call-wait more than 0")
	}
	if c.waitCount <= 0 || c.waitBytes <= 0 {
		return usagef("-call-wait-count and -call-wait-bytes must be positive")
	}
	return nil
}
