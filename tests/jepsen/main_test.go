package jepsen

import (
	"os"
	"testing"

	"github.com/reso-project/reso/internal/race"
)

// TestMain removes the reso binary BuildReso built once the tests ended.
func TestMain(m *testing.M) {
	race.QuickExit()
	code := m.Run()
	RemoveBuild()
	os.Exit(code)
}
