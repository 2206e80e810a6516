package channel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReasonsDocumented checks that the failure reasons the tree can send
// are the list of docs/channel.md#failure-reasons: the reason* constants
// of this package, and no reason written as a literal anywhere else.
func TestReasonsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "reason") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(id.Pos()), id.Name)
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					consts = append(consts, v)
				}
			}
		}
		checkNoLiteralReasons(t, fset, f)
	}
	doc := documentedReasons(t)
	slices.Sort(consts)
	slices.Sort(doc)
	if !slices.Equal(consts, doc) {
		t.Errorf("reasons in the code:\n  %q\ndocumented in docs/channel.md:\n  %q", consts, doc)
	}
}

// checkNoLiteralReasons fails for a reason written as a literal: the
// second argument of failedReply, or the last result returned by a
// function whose last result is a string named by nothing but its type
// (the reasons' functions), that is a non-empty string literal.
func checkNoLiteralReasons(t *testing.T, fset *token.FileSet, f *ast.File) {
	literal := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.STRING && lit.Value != `""` && lit.Value != "``"
	}
	returnsString := func(ft *ast.FuncType) bool {
		if ft.Results == nil || len(ft.Results.List) == 0 {
			return false
		}
		last := ft.Results.List[len(ft.Results.List)-1]
		id, ok := last.Type.(*ast.Ident)
		return ok && id.Name == "string"
	}
	var funcs []*ast.FuncType
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			funcs = append(funcs, n.Type)
			if n.Body != nil {
				ast.Inspect(n.Body, visit)
			}
			funcs = funcs[:len(funcs)-1]
			return false
		case *ast.FuncLit:
			funcs = append(funcs, n.Type)
			ast.Inspect(n.Body, visit)
			funcs = funcs[:len(funcs)-1]
			return false
		case *ast.ReturnStmt:
			if len(funcs) > 0 && returnsString(funcs[len(funcs)-1]) && len(n.Results) > 1 && literal(n.Results[len(n.Results)-1]) {
				t.Errorf("%s: a reason written as a literal: use a reason constant", fset.Position(n.Pos()))
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "failedReply" && len(n.Args) == 2 && literal(n.Args[1]) {
				t.Errorf("%s: failedReply with a literal reason: use a reason constant", fset.Position(n.Pos()))
			}
		}
		return true
	}
	ast.Inspect(f, visit)
}

// documentedReasons returns the reasons of the table under "### Failure
// reasons" in docs/channel.md.
func documentedReasons(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "docs", "channel.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n### Failure reasons\n")
	if !ok {
		t.Fatal("docs/channel.md has no Failure reasons section")
	}
	if i := strings.Index(after, "\n#"); i >= 0 {
		after = after[:i]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	var out []string
	for _, m := range row.FindAllStringSubmatch(after, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatal("no reasons listed in docs/channel.md")
	}
	return out
}
