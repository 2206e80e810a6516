package app

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet"
)

// TestFleetMaxLagFlag: -fleet-max-lag defaults to fleet.DefaultMaxLag,
// takes a duration of at least 100ms (0: the default, as the fleet
// takes it), and refuses a shorter or negative one as a usage error.
func TestFleetMaxLagFlag(t *testing.T) {
	dir := t.TempDir()
	base := []string{"-directory", dir, "-nats", "nats://127.0.0.1:4222"}
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, fleet.DefaultMaxLag},
		{[]string{"-fleet-max-lag", "5s"}, 5 * time.Second},
		{[]string{"-fleet-max-lag", "100ms"}, 100 * time.Millisecond},
		{[]string{"-fleet-max-lag", "0"}, 0},
	} {
		cfg, err := parseFlags(append(base, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.fleet.maxLag != c.want {
			t.Errorf("%q: -fleet-max-lag %v, want %v", c.args, cfg.fleet.maxLag, c.want)
		}
	}
	for _, bad := range []string{"50ms", "-1s", "soon"} {
		_, err := parseFlags(append(base, "-fleet-max-lag", bad), io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("-fleet-max-lag %q: %v; want a usage error", bad, err)
		}
	}
}
