package plugins_test

import (
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/plugins"
)

// TestAdmin checks that the contract's administrator is the tree's: the
// contract does not import the tree, so that a plugin that does not use
// it does not link it, and repeats the string.
func TestAdmin(t *testing.T) {
	if plugins.Admin != channel.Admin {
		t.Errorf("plugins.Admin %q, channel.Admin %q", plugins.Admin, channel.Admin)
	}
}
