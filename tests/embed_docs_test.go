package tests

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goBlockPages are the pages whose Go blocks must compile: a block that
// starts with a package clause is a file of its own; the others of a page
// are, together, one package (package main when one of them declares
// main), whose imports the test adds from goBlockImports.
var goBlockPages = []string{"../docs/embedding.md", "../docs/auth.md"}

// goBlockImports are the packages a block may use without importing them,
// by the name it uses.
var goBlockImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "io": "io", "log": "log",
	"net": "net", "http": "net/http", "os": "os", "signal": "os/signal",
	"strings": "strings", "syscall": "syscall", "time": "time",
	"app":         "github.com/reso-project/reso/app",
	"auth":        "github.com/reso-project/reso/middleware/auth",
	"channel":     "github.com/reso-project/reso/channel",
	"channelhost": "github.com/reso-project/reso/channelhost",
	"core":        "github.com/reso-project/reso/core",
	"doors":       "github.com/reso-project/reso/doors",
	"middleware":  "github.com/reso-project/reso/middleware",
	"pluginhost":  "github.com/reso-project/reso/pluginhost",
	"plugins":     "github.com/reso-project/reso/plugins",
	"server":      "github.com/reso-project/reso/server",
	"sqlitestore": "github.com/reso-project/reso/middleware/auth/sqlitestore",
}

// goBlock is a fenced Go block of a page.
type goBlock struct {
	line int // of its first line of code, from 1
	code string
}

// goBlocks returns the ```go blocks of text.
func goBlocks(text string) []goBlock {
	var out []goBlock
	var cur *goBlock
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &goBlock{line: i + 2}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
	}
	return out
}

// usedImports returns the import paths of goBlockImports whose names code
// uses as package qualifiers (name.X), in order.
func usedImports(t *testing.T, where, code string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), where, "package p\n"+code, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s does not parse: %v", where, err)
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				if path, ok := goBlockImports[id.Name]; ok {
					seen[path] = true
				}
			}
		}
		return true
	})
	var paths []string
	for p := range seen {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// TestEmbeddingDocsCompile writes the Go blocks of goBlockPages into a
// module of its own that depends on reso (go.mod: require and a replace
// to this repository, as a module of one's own would with go get), and
// builds and vets them: what the docs show an embedder compiles as shown.
func TestEmbeddingDocsCompile(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := fmt.Sprintf("module example.com/embedder\n\ngo 1.26\n\nrequire github.com/reso-project/reso v0.0.0\n\nreplace github.com/reso-project/reso => %s\n", root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(mod, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blocks := 0
	for _, page := range goBlockPages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(page), ".md")
		var fragments []goBlock
		for _, blk := range goBlocks(string(b)) {
			blocks++
			if strings.HasPrefix(blk.code, "package ") {
				write(fmt.Sprintf("%s_file_%d", base, blk.line), "main.go", fmt.Sprintf("//line %s:%d\n%s", page, blk.line, blk.code))
				continue
			}
			fragments = append(fragments, blk)
		}
		if len(fragments) == 0 {
			continue
		}
		var code, body strings.Builder
		pkg := "snippets"
		for _, blk := range fragments {
			fmt.Fprintf(&body, "\n//line %s:%d\n%s", page, blk.line, blk.code)
			if strings.Contains(blk.code, "\nfunc main() {") || strings.HasPrefix(blk.code, "func main() {") {
				pkg = "main"
			}
		}
		fmt.Fprintf(&code, "package %s\n\nimport (\n", pkg)
		for _, p := range usedImports(t, page, body.String()) {
			fmt.Fprintf(&code, "\t%q\n", p)
		}
		code.WriteString(")\n")
		code.WriteString(body.String())
		write(base, "snippets.go", code.String())
	}
	if blocks < 7 {
		t.Fatalf("found only %d Go blocks in %v", blocks, goBlockPages)
	}
	for _, args := range [][]string{{"build", "-mod=mod", "./..."}, {"vet", "-mod=mod", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s in a module of one's own: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
