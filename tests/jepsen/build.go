package jepsen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reso-project/reso/internal/race"
)

// resoPackage is the command the checks run.
const resoPackage = "github.com/reso-project/reso/cmd/reso"

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// BuildReso builds reso (./cmd/reso) once per test binary, into a new
// directory under os.TempDir, and returns the binary's path; a failed
// build fails tb. Under the race detector reso is built with -race as
// well, and a data race a node reports fails the test that ran it (see
// StartFleet). RemoveBuild removes the directory.
func BuildReso(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() { buildBin, buildErr = buildReso() })
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildBin
}

// RemoveBuild removes what BuildReso built, if it did; a TestMain calls
// it after m.Run. Otherwise the directory is left to the system.
func RemoveBuild() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// buildReso runs go build.
func buildReso() (string, error) {
	dir, err := os.MkdirTemp("", "reso-jepsen-")
	if err != nil {
		return "", err
	}
	buildDir = dir
	bin := filepath.Join(dir, "reso")
	args := append([]string{"build", "-o", bin}, race.BuildFlags()...)
	out, err := exec.Command("go", append(args, resoPackage)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("jepsen: go %v: %v\n%s", args, err, out)
	}
	return bin, nil
}
