package jepsen

import (
	"os"
	"testing"
)

// TestMain removes the reso binary BuildReso built once the tests ended.
func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuild()
	os.Exit(code)
}
