package app

import (
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X github.com/reso-project/reso/app.version=...". It is
// shown when the build carries no module version or VCS revision.
var version = "dev"

// versionString returns what -version prints after "reso": the module
// version and the VCS revision when the build has them (a build inside a
// git checkout, go install of a tagged module), else the -ldflags value,
// else "dev".
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	var parts []string
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		parts = append(parts, v)
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified == "true" {
			rev += "+dirty"
		}
		if len(parts) == 0 || !strings.Contains(parts[0], rev[:min(12, len(rev))]) {
			parts = append(parts, rev)
		}
	}
	if len(parts) == 0 {
		return version
	}
	return strings.Join(parts, " ")
}
