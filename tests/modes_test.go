package tests

import (
	"slices"
	"testing"
)

// TestModesFrom: RESO_TEST_MODES unset runs every mode, the fleet
// included; a value chooses among them; an unknown name is refused.
func TestModesFrom(t *testing.T) {
	t.Parallel()
	names := func(ms []mode) []string {
		var ns []string
		for _, m := range ms {
			ns = append(ns, m.name)
		}
		return ns
	}
	for _, c := range []struct {
		env  string
		want []string
	}{
		{"", []string{"compiled", "isolated", "fleet"}},
		{"  ", []string{"compiled", "isolated", "fleet"}},
		{"compiled", []string{"compiled"}},
		{"fleet, isolated", []string{"fleet", "isolated"}},
	} {
		ms, err := modesFrom(c.env)
		if err != nil || !slices.Equal(names(ms), c.want) {
			t.Errorf("RESO_TEST_MODES=%q: %v, %v; want %v", c.env, names(ms), err, c.want)
		}
	}
	if _, err := modesFrom("compiled,cluster"); err == nil {
		t.Error(`RESO_TEST_MODES="compiled,cluster" accepted`)
	}
}
