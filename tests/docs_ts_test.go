package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docsWithScripts are the pages whose JavaScript and TypeScript code
// blocks TestDocsTypeCheck compiles.
var docsWithScripts = []string{"../README.md", "../docs/*.md", "../examples/*/README.md"}

// scriptBlock is a JavaScript or TypeScript code block of a page.
type scriptBlock struct {
	page string // the file, relative to the repository
	line int    // the line of its opening fence
	ts   bool   // a ts or typescript block, else js
	code string
}

// scriptBlocks returns the code blocks of text fenced as js, javascript,
// mjs, ts or typescript.
func scriptBlocks(page, text string) []scriptBlock {
	var out []scriptBlock
	var cur *scriptBlock
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				cur.code += line + "\n"
			}
			continue
		}
		if cur != nil { // the closing fence
			out = append(out, *cur)
			cur = nil
			continue
		}
		switch lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```")); lang {
		case "js", "javascript", "mjs":
			cur = &scriptBlock{page: page, line: i + 1}
		case "ts", "typescript":
			cur = &scriptBlock{page: page, line: i + 1, ts: true}
		default:
			// Another language: skip to its closing fence.
			cur = &scriptBlock{page: page, line: -1}
		}
	}
	kept := out[:0]
	for _, b := range out {
		if b.line > 0 {
			kept = append(kept, b)
		}
	}
	return kept
}

// tscPath returns the TypeScript compiler that client/js/package.json
// pins (npm ci --prefix client/js installs it), or skips t (fails it
// under requireTools).
func tscPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../client/js/node_modules/typescript/bin/tsc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		msg := "no TypeScript in client/js/node_modules: run `npm ci --prefix client/js` to type-check the docs' examples"
		if requireTools() {
			t.Fatal(msg + " (CI=true)")
		}
		t.Skip(msg)
	}
	return p
}

// typeCheck writes the blocks into a directory of their own as modules
// (name.js or name.ts) beside client/js/reso.d.ts, so that their import
// of "./reso.js" gets reso.js's declarations, and compiles them with
// tsc --strict --noEmit; JavaScript is checked as such (--checkJs).
// It returns tsc's output and whether it succeeded.
func typeCheck(t *testing.T, node, tsc string, blocks []scriptBlock) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	decl, err := os.ReadFile("../client/js/reso.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reso.d.ts"), decl, 0o644); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs("../client/js/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	// The examples import ws and use Node's types from client/js.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	args := []string{tsc, "--strict", "--noEmit", "--pretty", "false",
		"--module", "es2022", "--target", "es2022", "--moduleResolution", "bundler",
		"--lib", "dom,es2022", "--types", "node", "--allowJs", "--checkJs"}
	for _, b := range blocks {
		name := strings.NewReplacer("../", "", "/", "_", ".md", "").Replace(b.page) + fmt.Sprintf("_%d", b.line)
		if b.ts {
			name += ".ts"
		} else {
			name += ".js"
		}
		// "export {}" makes a block without imports a module of its own
		// (with top-level await), as a page's <script type="module"> is.
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.code+"\nexport {};\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.SysProcAttr = childAttr()
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tsc did not finish within 3 minutes:\n%s", out)
	}
	return string(out), err == nil
}

// TestDocsTypeCheck compiles every JavaScript and TypeScript code block of
// the README, docs/ and the examples' READMEs against reso.d.ts with
// tsc --strict (module and target ES2022, lib dom and es2022, Node's
// types, the ws package's types), so that what the docs show compiles
// as written in a project of one's own.
func TestDocsTypeCheck(t *testing.T) {
	t.Parallel()
	node := nodePath(t)
	tsc := tscPath(t)
	var blocks []scriptBlock
	for _, pattern := range docsWithScripts {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, scriptBlocks(f, string(b))...)
		}
	}
	var inClients int
	for _, b := range blocks {
		if b.page == "../docs/clients.md" {
			inClients++
		}
	}
	if inClients < 3 {
		t.Fatalf("found %d script blocks in docs/clients.md, want its page example, the ws example and watch at least", inClients)
	}
	if out, ok := typeCheck(t, node, tsc, blocks); !ok {
		t.Fatalf("tsc --strict on the docs' %d script blocks (files named page_line):\n%s", len(blocks), out)
	}
	t.Logf("%d script blocks compile", len(blocks))

	// The check itself: a block with a type error fails.
	bad := scriptBlock{page: "bad", line: 1, code: `import { Channel } from "./reso.js";
const ch = new Channel("ws://localhost:8000/channel", { backoffMin: "fast" });
`}
	if out, ok := typeCheck(t, node, tsc, []scriptBlock{bad}); ok || !strings.Contains(out, "TS2322") {
		t.Fatalf("tsc accepted a wrong option (want TS2322):\n%s", out)
	}
}
