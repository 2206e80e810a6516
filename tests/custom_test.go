package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reso-project/reso/internal/race"
)

// TestCustomBinary builds examples/custom, a reso binary of one's own with
// a third-party plugin (hello) compiled in next to the bundled ones, and
// runs it in both modes (isolated: every plugin, hello included, in a child
// process of that binary): the third-party routes answer after the bundled
// ones, which answer as in reso.
func TestCustomBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "reso-custom")
	if out, err := exec.Command("go", append(append([]string{"build"}, race.BuildFlags()...), "-o", bin, "../examples/custom")...).CombinedOutput(); err != nil {
		t.Fatalf("building examples/custom: %v\n%s", err, out)
	}
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		s, err := startWith(t, dir, m, launch{binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		defer s.stop()
		check(t, s.get(t, "/hello/Ada"), want{ok200, jsonCT, `{"hello": "Ada"}`})
		check(t, s.get(t, "/xml/hello/Ada"), want{ok200, xmlCT, `<hello>Ada</hello>`})
		check(t, s.get(t, "/config"), want{ok200, jsonCT, `{"config": {"directory": "."}}`})
		got := s.get(t, "/nothing")
		lines := strings.Split(strings.TrimSpace(got.Body), "\n")
		if last := lines[len(lines)-1]; last != `GET /hello(?:/(?P<name>[^/?]*))?(?:$|\?)` {
			t.Errorf("last route %q, want hello's (after the bundled ones):\n%s", last, got.Body)
		}
		if m.name == "isolated" && !strings.Contains(s.Log(), "hello-plugin ready") {
			t.Errorf("no record of the isolated hello plugin in the log:\n%s", s.Log())
		}
	})
}
