package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tourLine is a curl command of a tour (README.md, docs/) with the answer its comment
// promises.
type tourLine struct {
	cmd     string // the shell command, as written
	comment string // what follows "#", on its line or the next
}

// tourSections are the parts of the README and of docs/ whose curl lines
// TestReadmeTour runs, in this order, each from the heading "from" up to
// the heading "to".
var tourSections = []struct{ file, from, to string }{
	{"../README.md", "## A tour with curl", "## Where to go next"},
	{"../docs/auth.md", "## Try it", "## The example user and managing users"},
}

// readmeTour returns the curl lines of tourSections.
func readmeTour(t *testing.T) []tourLine {
	t.Helper()
	var out []tourLine
	for _, sec := range tourSections {
		b, err := os.ReadFile(sec.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		from := strings.Index(text, "\n"+sec.from+"\n")
		to := strings.Index(text, "\n"+sec.to+"\n")
		if from < 0 || to < from {
			t.Fatalf("%s: no section %q followed by %q", sec.file, sec.from, sec.to)
		}
		out = append(out, curlLines(text[from:to])...)
	}
	return out
}

// curlLines returns the curl lines of the code blocks of text, each with
// the comment that follows it on its line or alone on the next.
func curlLines(text string) []tourLine {
	var out []tourLine
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inCode = !inCode
		case !inCode:
		case strings.HasPrefix(trimmed, "curl "):
			cmd, comment, _ := strings.Cut(trimmed, " #")
			out = append(out, tourLine{cmd: strings.TrimSpace(cmd), comment: strings.TrimSpace(comment)})
		case strings.HasPrefix(trimmed, "#") && len(out) > 0 && out[len(out)-1].comment == "":
			out[len(out)-1].comment = strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		}
	}
	return out
}

var statusInComment = regexp.MustCompile(`HTTP/1\.1 (\d{3})[^,]*`)

// TestReadmeTour runs every curl command of the tours (tourSections), as written,
// against a server started in the repository root (with -digest, which the
// tour starts a second server for), and checks each answer against its
// comment: the status line it names (else 200, or 206 for a range), and the
// body when the comment shows a whole JSON or XML body.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (.ci/run installs it)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	s, err := startIn(t, root, mode{name: "compiled"}, "-digest")
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	work := t.TempDir() // curl's own files: the cookie jar, downloads
	lines := readmeTour(t)
	if len(lines) < 20 {
		t.Fatalf("found only %d curl lines in the tours", len(lines))
	}
	for _, l := range lines {
		cmd := strings.ReplaceAll(l.cmd, "localhost:8000", s.Addr) + ` -s -S -w '\n%{http_code}'`
		c := command("sh", "-c", cmd)
		c.Dir = work
		out, err := c.Output()
		if err != nil {
			t.Errorf("%s: %v", l.cmd, err)
			continue
		}
		body, codeText, _ := cutLast(string(out), "\n")
		code, _ := strconv.Atoi(codeText)
		want, wantLine := 200, ""
		if m := statusInComment.FindStringSubmatch(l.comment); m != nil {
			want, _ = strconv.Atoi(m[1])
			wantLine = strings.TrimSpace(m[0])
		} else if strings.Contains(l.comment, "(206)") {
			want = 206
		}
		if code != want {
			t.Errorf("%s: status %d, the docs say %d (%s)", l.cmd, code, want, l.comment)
			continue
		}
		headers := ""
		if strings.Contains(l.cmd, " -i ") || strings.Contains(l.cmd, " -I ") {
			headers, body, _ = strings.Cut(body, "\r\n\r\n")
		}
		if wantLine != "" && !strings.HasPrefix(headers, wantLine+"\r\n") {
			t.Errorf("%s: status line %q, the docs say %q", l.cmd, firstLine(headers), wantLine)
		}
		if (strings.HasPrefix(l.comment, "{") || strings.HasPrefix(l.comment, "<")) && !strings.Contains(l.comment, "...") {
			if body != l.comment {
				t.Errorf("%s: body %q, the docs say %q", l.cmd, body, l.comment)
			}
		}
	}
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return "", s, false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}
