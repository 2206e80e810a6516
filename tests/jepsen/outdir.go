package jepsen

import (
	"flag"
	"os"
	"testing"
)

// OutputDir returns a directory for a test's histories and
// visualizations that stays after the test (t.TempDir does not): a new
// one under the value of -test.outputdir when set, else under the
// system's temporary directory. It logs the path.
func OutputDir(tb testing.TB) string {
	tb.Helper()
	parent := ""
	if f := flag.Lookup("test.outputdir"); f != nil {
		parent = f.Value.String()
	}
	dir, err := os.MkdirTemp(parent, "reso-jepsen-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("histories and visualizations go to %s", dir)
	return dir
}
