package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// requireTools reports whether a missing Node or Chromium fails a test
// instead of skipping it: with CI=true (or RESO_REQUIRE_BROWSER, as
// .ci/run sets).
func requireTools() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RESO_REQUIRE_BROWSER") != ""
}

// nodePath returns Node 20 or later ($RESO_NODE, else node on PATH), or
// skips t (fails it under requireTools).
func nodePath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("RESO_NODE")
	if p == "" {
		var err error
		if p, err = exec.LookPath("node"); err != nil {
			msg := "no node on PATH (or RESO_NODE): install Node 20 or later to run the JavaScript client's tests"
			if requireTools() {
				t.Fatal(msg + " (CI=true)")
			}
			t.Skip(msg)
		}
	}
	out, err := exec.Command(p, "-p", "process.versions.node.split('.')[0] + ' ' + typeof WebSocket").Output()
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	major, ws, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		msg := fmt.Sprintf("%s is Node %s: the JavaScript client's tests need Node 20 or later", p, major)
		if requireTools() {
			t.Fatal(msg + " (CI=true)")
		}
		t.Skip(msg)
	}
	nodeWebSocketFlag.Store(ws != "function")
	return p
}

// nodeWebSocketFlag says whether Node needs --experimental-websocket for
// its WebSocket (Node 20 and 21; later ones have it by default).
var nodeWebSocketFlag atomic.Bool // set by nodePath, which tests call at once

// nodeEventSourceFlag returns --experimental-eventsource when node has an
// EventSource only behind it (watch.test.mjs runs on it; without one it
// is skipped), else nothing.
func nodeEventSourceFlag(node string) []string {
	if out, _ := exec.Command(node, "-p", "typeof EventSource").Output(); strings.TrimSpace(string(out)) == "function" {
		return nil
	}
	out, err := exec.Command(node, "--experimental-eventsource", "-p", "typeof EventSource").Output()
	if err != nil || strings.TrimSpace(string(out)) != "function" {
		return nil
	}
	return []string{"--experimental-eventsource"}
}

// TestJSClient runs the tests of the JavaScript client
// (client/js/test/*.test.mjs) in Node's test runner against the reso
// binary of this package: messages and replies, failures, a connection
// lost before the reply, writes while disconnected, reconnects with
// recovery, kill -9 with a restart, failed handshakes, servers that end
// connections at once (each attempt ends with its connection, the back-off
// grows), watch's back-off against a scripted event stream, credentials, lists of URLs, timeouts and signals, and a history
// reset. They run twice: on
// Node's own WebSocket, and on the ws package's (client/js/node_modules).
func TestJSClient(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../client/js/test/*.test.mjs")
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in client/js/test: %v", err)
	}
	// The fleet's file runs in TestJSClientFleet, which starts the fleet.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == jsFleetTest })
	t.Run("node", func(t *testing.T) {
		runNodeTests(t, []string{"RESO_JS_WEBSOCKET=node"}, files...)
	})
	t.Run("ws", func(t *testing.T) {
		requireNodeModules(t)
		runNodeTests(t, []string{"RESO_JS_WEBSOCKET=ws"}, files...)
	})
}

// requireNodeModules skips t (fails it under requireTools) when
// client/js/node_modules, the dev dependencies of package.json (the ws
// package, TypeScript), is not installed.
func requireNodeModules(t *testing.T) {
	t.Helper()
	for _, p := range []string{"ws", "typescript"} {
		if _, err := os.Stat(filepath.Join("../client/js/node_modules", p, "package.json")); err != nil {
			msg := "client/js/node_modules has no " + p + ": run npm ci --prefix client/js"
			if requireTools() {
				t.Fatal(msg + " (CI=true)")
			}
			t.Skip(msg)
		}
	}
}

// runNodeTests runs the test files in Node's test runner with RESO_BIN
// set to the reso binary of this package and env added, failing t if a
// test fails.
func runNodeTests(t *testing.T, env []string, files ...string) {
	t.Helper()
	node := nodePath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --test-timeout: a test that hangs fails by its name, within the context's bound.
	args := append([]string{"--test", "--test-reporter=spec", "--test-timeout=120000"}, files...)
	if nodeWebSocketFlag.Load() {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	args = append(nodeEventSourceFlag(node), args...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.SysProcAttr = childAttr()
	cmd.Env = append(append(os.Environ(), "RESO_BIN="+binary, "NO_COLOR=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("node --test:\n%s", out)
}

// TestJSClientTypes type-checks reso.d.ts with tsc --strict
// (client/js/node_modules) against client/js/test/types.mts: Node with the
// ws package, the request options, errors narrowed by code. The docs'
// examples are TestDocsTypeCheck's.
func TestJSClientTypes(t *testing.T) {
	t.Parallel()
	node := nodePath(t)
	requireNodeModules(t)
	dir := t.TempDir()
	modules, err := filepath.Abs("../client/js/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reso.js", "reso.d.ts", "test/types.mts"} {
		b, err := os.ReadFile("../client/js/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(modules, "typescript/bin/tsc"),
		"--strict", "--noEmit", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--lib", "es2022,dom", "--types", "node", "types.mts")
	cmd.SysProcAttr = childAttr()
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc --strict types.mts: %v\n%s", err, out)
	}
}

// TestJSClientReasons checks that reso.d.ts's FailureReason lists exactly
// the failure reasons of docs/channel.md (its table under "Failure
// reasons"), in the same order.
func TestJSClientReasons(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/channel.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "### Failure reasons\n")
	table, _, _ = strings.Cut(table, "\n### ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	dts, err := os.ReadFile("../client/js/reso.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	_, union, _ := strings.Cut(string(dts), "export type FailureReason =")
	union, _, _ = strings.Cut(union, ";")
	var typed []string
	for _, m := range regexp.MustCompile(`\| "([^"]+)"`).FindAllStringSubmatch(union, -1) {
		typed = append(typed, m[1])
	}
	if len(documented) == 0 || !slices.Equal(documented, typed) {
		t.Errorf("reso.d.ts's FailureReason is not docs/channel.md's list of failure reasons:\n docs: %q\n d.ts: %q", documented, typed)
	}
}
