package files

import (
	"context"
	"github.com/reso-project/reso/dirfiles"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

func TestListingNamesAndLinks(t *testing.T) {
	dir := t.TempDir()
	when := time.Unix(1700000000, 0)
	for _, name := range []string{"b c.txt", "a?.txt", "100%"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("xy"), 0o644)
		os.Chtimes(p, when, when)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	os.Symlink("d", filepath.Join(dir, "to-d"))
	os.Symlink("..", filepath.Join(dir, "up"))
	host := pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir})
	l := &listing{testFS(host)}
	v, err := l.Get(context.Background(), &core.Request{Path: ""})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"files": [` +
		`{"file": {"name": "100%", "url": "/file/100%25", "size": 2, "mtime": 1700000000}}, ` +
		`{"file": {"name": "a?.txt", "url": "/file/a%3F.txt", "size": 2, "mtime": 1700000000}}, ` +
		`{"file": {"name": "b c.txt", "url": "/file/b%20c.txt", "size": 2, "mtime": 1700000000}}, ` +
		`{"dir": {"name": "d", "url": "/files/d"}}, ` +
		`{"dir": {"name": "to-d", "url": "/files/to-d"}}]}`
	if got := string(core.AppendJSON(nil, v)); got != want {
		t.Errorf("%s\nwant\n%s", got, want)
	}
}

func TestListingErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	l := &listing{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir}))}
	for path, want := range map[string]error{
		"..":      ErrInvalidPath,
		"a/..b":   ErrInvalidPath,
		"f":       core.ErrNotFound,
		"missing": core.ErrNotFound,
	} {
		if _, err := l.Get(context.Background(), &core.Request{Path: path}); err != want {
			t.Errorf("%q: %v, want %v", path, err, want)
		}
	}
	missing := &listing{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: filepath.Join(dir, "nope")}))}
	if _, err := missing.Get(context.Background(), &core.Request{}); err != core.ErrNotFound {
		t.Errorf("missing directory: %v", err)
	}
}

func TestDownloadConfined(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("no"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok"), []byte("yes"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "leak"))
	os.Symlink("loop", filepath.Join(dir, "loop"))
	d := &download{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir}))}
	resp, err := d.Handle(context.Background(), &core.Request{Method: "GET", Path: "ok"})
	if err != nil || resp.ContentType != core.TypeOctet || resp.Content == nil || resp.Content.Size != 3 {
		t.Fatalf("%+v %v", resp, err)
	}
	resp.Content.ReaderAt.(io.Closer).Close()
	for path, want := range map[string]error{
		"leak":                         core.ErrNotFound,
		"../" + filepath.Base(outside): core.ErrNotFound,
		"loop":                         ErrReadingFile,
		"":                             core.ErrNotFound,
	} {
		if _, err := d.Handle(context.Background(), &core.Request{Method: "GET", Path: path}); err != want {
			t.Errorf("%q: %v, want %v", path, err, want)
		}
	}
}

// testFS returns the state the routes of a Plugin share, on host.
func testFS(host plugins.Settings) *fileSystem {
	return &fileSystem{host: host, open: dirfiles.NewOpener(hiddenOf(host), 0, 0)}
}
