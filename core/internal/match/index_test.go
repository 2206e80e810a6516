package match

import (
	"strings"
	"testing"
)

// scanEach is Index.Each by a linear scan of prefixes.
func scanEach(prefixes []string, start int, target string, try func(int) bool) int {
	for i := max(start, 0); i < len(prefixes); i++ {
		if strings.HasPrefix(target, prefixes[i]) && try(i) {
			return i
		}
	}
	return -1
}

// checkEach compares the routes Index.Each tries, and its answer, with a
// linear scan, for try accepting the routes in accept.
func checkEach(t *testing.T, prefixes []string, start int, target string, accept map[int]bool) {
	t.Helper()
	p := NewIndex(prefixes)
	var got, want []int
	gi := p.Each(start, target, func(i int) bool { got = append(got, i); return accept[i] })
	wi := scanEach(prefixes, start, target, func(i int) bool { want = append(want, i); return accept[i] })
	if gi != wi || len(got) != len(want) {
		t.Fatalf("prefixes %q: Each(%d, %q) = %d trying %v, want %d trying %v", prefixes, start, target, gi, got, wi, want)
	}
	for j := range got {
		if got[j] != want[j] {
			t.Fatalf("prefixes %q: Each(%d, %q) = %d trying %v, want %d trying %v", prefixes, start, target, gi, got, wi, want)
		}
	}
}

func TestIndexEach(t *testing.T) {
	nested := make([]string, 0, 80)
	for i := 40; i >= 0; i-- {
		nested = append(nested, "/"+strings.Repeat("a", i), "/"+strings.Repeat("a", i)+"b")
	}
	for _, tc := range []struct {
		name     string
		prefixes []string
		targets  []string
	}{
		{"empty", nil, []string{"", "/a"}},
		{"one", []string{"/a"}, []string{"", "/", "/a", "/ab", "/b"}},
		{"overlap", []string{"/a", "/ab", "", "/ab", "/abc", "/b", "/a", ""}, []string{"", "/", "/a", "/ab", "/abc", "/abd", "/b", "x"}},
		{"split", []string{"/api/v1/x", "/api/v2/y", "/api/", "/static/", "/api/v1/"}, []string{"/api/v1/x/1", "/api/v2/y", "/api/v3", "/static/a.css", "/ap"}},
		{"not ASCII", []string{"/é", "/a", "/aé", "/éa", "\x97", "/\xc3"}, []string{"/é", "/éa", "/aé", "/a\xc3", "\x97", "\xc2\x97", "/\xc3"}},
		{"nested", nested, []string{"/", "/b", "/aaab", "/" + strings.Repeat("a", 35) + "b", "/" + strings.Repeat("a", 50)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range tc.targets {
				for start := 0; start <= len(tc.prefixes); start++ {
					checkEach(t, tc.prefixes, start, target, nil)
					checkEach(t, tc.prefixes, start, target, map[int]bool{len(tc.prefixes) - 1: true})
					checkEach(t, tc.prefixes, start, target, map[int]bool{start + 2: true, start + 5: true})
				}
			}
		})
	}
	// Both ways of walking are covered: small tables keep merged paths,
	// the nested one is past their bound.
	if split := NewIndex([]string{"/api/v1/x", "/api/", "/"}); !split.merged {
		t.Error("a table of 3 routes: paths not merged")
	}
	if idx := NewIndex(nested); idx.merged {
		t.Error("the nested table: paths merged past their bound")
	}
	var zero Index
	if got := zero.Each(0, "/a", func(int) bool { return true }); got != -1 {
		t.Errorf("zero Index: Each = %d, want -1", got)
	}
}

// TestIndexAllocs checks that a walk allocates nothing.
func TestIndexAllocs(t *testing.T) {
	var prefixes []string
	for i := 40; i >= 0; i-- {
		prefixes = append(prefixes, "/"+strings.Repeat("a", i), "/api/v1/"+strings.Repeat("b", i))
	}
	p := NewIndex(prefixes)
	for _, target := range []string{"/api/v1/bbbb", "/" + strings.Repeat("a", 40), "/nothing"} {
		n := 0
		try := func(i int) bool { n++; return false }
		if a := testing.AllocsPerRun(100, func() { p.Each(0, target, try) }); a != 0 {
			t.Errorf("Each(%q): %v allocations", target, a)
		}
	}
}

// FuzzIndex compares Index.Each with a linear scan over a random table of
// prefixes, each a piece of the target.
func FuzzIndex(f *testing.F) {
	f.Add("/api/v1/x", []byte{0, 5, 9, 3, 5, 0}, 0, 3)
	f.Add("/aaaa", []byte{1, 2, 3, 4, 5, 2, 3, 0xff}, 2, 7)
	f.Fuzz(func(t *testing.T, target string, table []byte, start, accept int) {
		if len(table) > 96 {
			table = table[:96]
		}
		// A byte n below 0x80 is the target's first n%(len+2) bytes (one
		// past the end adds an "x"), others are "/z".
		prefixes := make([]string, len(table))
		for i, c := range table {
			switch n := int(c) % (len(target) + 2); {
			case c >= 0x80:
				prefixes[i] = "/z"
			case n <= len(target):
				prefixes[i] = target[:n]
			default:
				prefixes[i] = target + "x"
			}
		}
		checkEach(t, prefixes, start%(len(table)+2), target, map[int]bool{accept: true})
	})
}
