package natstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// serverBinary returns the path of the nats-server binary of the version
// this module requires, building it at the first call of the process
// into the user's cache directory unless it is there already.
func serverBinary() (string, error) {
	buildOnce.Do(func() { buildBin, buildErr = build() })
	return buildBin, buildErr
}

// serverModule is the module of the NATS server.
const serverModule = "github.com/nats-io/nats-server/v2"

// build builds the nats-server binary (go build in the module that
// requires it), writing it under a temporary name and renaming it, so
// that test binaries building at once do not see a partial file.
func build() (string, error) {
	version := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == serverModule {
				version = d.Version
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "reso-natstest", version)
	bin := filepath.Join(dir, "nats-server")
	if version != "unknown" {
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			return bin, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "nats-server-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	out, err := exec.Command("go", "build", "-o", tmp.Name(), serverModule).CombinedOutput()
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("natstest: go build %s: %v\n%s", serverModule, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return bin, nil
}
