package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docPage is a page of README.md or docs/, read once.
type docPage struct {
	path string // relative to the repository root, e.g. docs/auth.md
	text string
}

// docPages returns README.md and every page of docs/.
func docPages(t *testing.T) []docPage {
	t.Helper()
	names, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	names = append([]string{"../README.md"}, names...)
	var pages []docPage
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, docPage{path: strings.TrimPrefix(name, "../"), text: string(b)})
	}
	if len(pages) < 5 {
		t.Fatalf("found only %d pages", len(pages))
	}
	return pages
}

// splitFences returns the lines of text outside fenced code blocks, and code the
// lines inside them; each keeps its line number (from 1).
func splitFences(text string) (prose, code map[int]string) {
	prose, code = map[int]string{}, map[int]string{}
	in := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			code[i+1] = line
		} else {
			prose[i+1] = line
		}
	}
	return prose, code
}

// headingAnchors returns the anchors GitHub gives the headings of a page:
// the heading's text lowercased, every character but letters, digits,
// spaces, '-' and '_' dropped, spaces turned into '-'; a repeated anchor
// gets -1, -2, ...
func headingAnchors(text string) map[string]bool {
	prose, _ := splitFences(text)
	lines := make([]int, 0, len(prose))
	for n := range prose {
		lines = append(lines, n)
	}
	slices.Sort(lines)
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, n := range lines {
		line := prose[n]
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		a := githubAnchor(line[level+1:])
		if k := seen[a]; k > 0 {
			anchors[a+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// githubAnchor is the anchor of a heading's text under GitHub's rules.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

var (
	// mdLink is the target of a Markdown link: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// textAnchor is a page and anchor named in running text or code:
	// docs/channel.md#permissions, wire.md#status-lines.
	textAnchor = regexp.MustCompile(`(?:^|[\s(` + "`" + `"'])((?:docs/)?[a-z]+\.md#[a-z0-9_-]+)`)
)

// TestDocsAnchors checks that every relative link with an anchor in
// README.md and docs/ ([x](page.md#anchor), [x](#anchor)), and every page
// with an anchor named in the text (docs/channel.md#permissions), points
// to a heading that exists.
func TestDocsAnchors(t *testing.T) {
	t.Parallel()
	pages := docPages(t)
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		anchors[p.path] = headingAnchors(p.text)
	}
	checked := 0
	for _, p := range pages {
		prose, _ := splitFences(p.text)
		for n, line := range prose {
			var refs []struct{ target, base string }
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				refs = append(refs, struct{ target, base string }{m[1], filepath.Dir(p.path)})
			}
			for _, m := range textAnchor.FindAllStringSubmatch(line, -1) {
				base := filepath.Dir(p.path)
				if strings.HasPrefix(m[1], "docs/") {
					base = "."
				}
				refs = append(refs, struct{ target, base string }{m[1], base})
			}
			for _, ref := range refs {
				if strings.Contains(ref.target, "://") || strings.HasPrefix(ref.target, "mailto:") {
					continue
				}
				file, anchor, ok := strings.Cut(ref.target, "#")
				if !ok {
					continue
				}
				target := p.path
				if file != "" {
					target = filepath.ToSlash(filepath.Join(ref.base, file))
				}
				have, known := anchors[target]
				if !known {
					if _, err := os.Stat("../" + target); err != nil {
						t.Errorf("%s:%d: %s: no page %s", p.path, n, ref.target, target)
					}
					continue
				}
				checked++
				if !have[anchor] {
					t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", p.path, n, ref.target, target, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d anchors", checked)
	}
	t.Logf("checked %d anchors", checked)
}

// repoPath is a path of this repository named in the docs: a package
// (channel/fleet, middleware/auth/natsstore), a program (cmd/reso) or a
// file (tests/readme_test.go), with or without ./ or the module path.
var repoPath = regexp.MustCompile(`(?:^|[\s(` + "`" + `"'])(?:\./|github\.com/reso-project/reso/)?((?:app|bench|channel|client|cmd|core|examples|middleware|plugins|server|tests)(?:/[A-Za-z0-9_.-]+)+)/?`)

// TestDocsPaths checks that every package, program or file of the
// repository named in README.md and docs/ exists.
func TestDocsPaths(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, p := range docPages(t) {
		for n, line := range strings.Split(p.text, "\n") {
			for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
				path := strings.TrimRight(m[1], ".,:;")
				checked++
				if _, err := os.Stat("../" + path); err != nil {
					t.Errorf("%s:%d: names %s, which does not exist", p.path, n+1, path)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d paths", checked)
	}
	t.Logf("checked %d paths", checked)
}

var (
	// flagInCode is a flag at the start of a code span: `-db FILE`, `-isolate hello`.
	flagInCode = regexp.MustCompile("`-([a-z][a-z0-9-]*)[` =]")
	// resoCommand is a command line that runs the server: reso, ./cmd/reso, or the binary of an example.
	resoCommand = regexp.MustCompile(`(?:^|[\s(` + "`" + `])(?:reso|\./cmd/reso)\s+([^#&|` + "`" + `]*)`)
	// flagArg is a flag among a command's arguments.
	flagArg = regexp.MustCompile(`(?:^|\s)-([a-z][a-z0-9-]*)`)
	// helpFlag is a flag in the list of reso -h.
	helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
)

// notResoFlags are names in code spans that start with '-' but are not
// flags of reso: SQLite's companion files, the go command's flags, a
// number; otherFlags are flags of other programs, by the page that names
// them.
var (
	notResoFlags = map[string]bool{
		"wal": true, "shm": true, "journal": true,
		"race": true, "run": true, "count": true, "bench": true, "benchtime": true, "timeout": true, "tags": true, "v": true, "short": true,
		"inf": true,
	}
	otherFlags = map[string]bool{
		"docs/call.md -alice": true, "docs/call.md -bob": true, // examples/call
		"docs/fleet.md -d": true, "docs/fleet.md -heartbeat": true, // bench/fleet.sh, bench/fleet-figures.sh
		"docs/fleet.md -slack": true, "docs/fleet.md -cooldown": true, // bench/fleet-soak.sh
		"docs/fleet.md -idle": true, // bench/fleet-figures.sh
	}
)

// TestDocsFlags checks that every flag named in README.md and docs/ (at
// the start of a code span, or an argument of a reso command line) is a
// flag of reso (as reso -h lists them), and that docs/flags.md names every
// flag reso -h lists.
func TestDocsFlags(t *testing.T) {
	t.Parallel()
	stdout, _, code := runReso(t, t.TempDir(), nil, "", "-h")
	if code != 0 {
		t.Fatalf("reso -h: exit status %d", code)
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(stdout, -1) {
		flags[m[1]] = true
	}
	if len(flags) < 30 || !flags["addr"] || !flags["nats"] {
		t.Fatalf("reso -h lists only %d flags:\n%s", len(flags), stdout)
	}
	checked := 0
	var flagsPage string
	for _, p := range docPages(t) {
		if p.path == "docs/flags.md" {
			flagsPage = p.text
		}
		for n, line := range strings.Split(p.text, "\n") {
			var names []string
			for _, m := range flagInCode.FindAllStringSubmatch(line, -1) {
				names = append(names, m[1])
			}
			for _, m := range resoCommand.FindAllStringSubmatch(line, -1) {
				for _, f := range flagArg.FindAllStringSubmatch(m[1], -1) {
					names = append(names, f[1])
				}
			}
			for _, name := range names {
				if notResoFlags[name] || otherFlags[p.path+" -"+name] || name == "h" {
					continue
				}
				checked++
				if !flags[name] {
					t.Errorf("%s:%d: names the flag -%s, which reso -h does not list", p.path, n+1, name)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d flags", checked)
	}
	t.Logf("checked %d flags", checked)
	for name := range flags {
		if !strings.Contains(flagsPage, "`-"+name) && !strings.Contains(flagsPage, ", `-"+name) {
			t.Errorf("docs/flags.md does not name -%s, which reso -h lists", name)
		}
	}
}
