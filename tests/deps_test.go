package tests

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path of this repository's module.
const module = "github.com/reso-project/reso"

// listDeps returns the packages of this module that pkg depends on, itself
// included, as go list -deps names them.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "../"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if p == module || strings.HasPrefix(p, module+"/") {
			deps = append(deps, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
		}
	}
	return deps
}

// TestDependencyFloors checks that dependencies point one way
// (docs/embedding.md): no package on a lower floor imports one of a
// higher floor, and a plugin that does not use the resource tree does not
// link it.
func TestDependencyFloors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pkg     string
		allowed []string // packages of the module it may depend on, besides itself
	}{
		{"core", []string{"core/internal/match"}},
		{"channel", nil},
		{"plugins", []string{"core", "core/internal/match"}},
		{"middleware", []string{"core", "core/internal/match"}},
		{"middleware/auth", []string{"core", "core/internal/match", "middleware"}},
		{"pluginhost", []string{"core", "core/internal/match", "plugins"}},
		{"pluginrpc", []string{"core", "core/internal/match", "plugins", "pluginrpc/pluginv3"}},
		// The doors' handlers: what plugins share links no host.
		{"doors", []string{"core", "core/internal/match", "channel"}},
		{"channelhost", []string{"core", "core/internal/match", "channel", "plugins", "doors", "pluginhost", "websocket"}},
		{"websocket", []string{"core", "core/internal/match"}},
		// The safe opening of served files: what files and www share.
		{"dirfiles", []string{"core", "core/internal/match"}},
		{"server", []string{"core", "core/internal/match"}},
		// A third-party plugin links the contract and its transport, never
		// the tree, the host or the bundled plugins.
		{"examples/hello-plugin", []string{"core", "core/internal/match", "plugins", "pluginrpc", "pluginrpc/pluginv3", "examples/hello-plugin/hello"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			for _, d := range listDeps(t, tc.pkg) {
				if d != tc.pkg && !slices.Contains(tc.allowed, d) {
					t.Errorf("%s depends on %s", tc.pkg, d)
				}
			}
		})
	}
}

// TestBundledPluginsStandAlone checks that plugins/ holds the contract and
// bundled plugins that stand alone: none links another plugin, the host
// runtime, the process boundary, the WebSocket transport or the program;
// what plugins share lives in the contract or a library package (doors,
// dirfiles).
func TestBundledPluginsStandAlone(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "../plugins/...").Output()
	if err != nil {
		t.Fatalf("go list ../plugins/...: %v", err)
	}
	host := []string{"pluginhost", "pluginrpc", "websocket", "channelhost", "app"}
	for _, p := range strings.Fields(string(out)) {
		pkg := strings.TrimPrefix(p, module+"/")
		if pkg == "plugins" {
			continue
		}
		t.Run(pkg, func(t *testing.T) {
			for _, d := range listDeps(t, pkg) {
				other := d != pkg && strings.HasPrefix(d, "plugins/")
				if other || slices.Contains(host, d) || strings.HasPrefix(d, "pluginrpc/") {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		})
	}
}
