package files

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// stateDir lays out a served directory holding the server's state files
// and returns the directory and the value of plugins.SettingHidden.
//
//	reso.db, reso.db-wal, secret   state files (reso.db-shm, reso.db-journal absent)
//	other.bin                      hard link to reso.db
//	wal-link                       symbolic link to reso.db-wal
//	ok.txt, sub/reso.db            ordinary files (the second merely named like the database)
func stateDir(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		"reso.db": "database", "reso.db-wal": "wal", "secret": "key",
		"ok.txt": "ok", "sub/reso.db": "not the database",
	} {
		must(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	must(os.Link(filepath.Join(dir, "reso.db"), filepath.Join(dir, "other.bin")))
	must(os.Symlink("reso.db-wal", filepath.Join(dir, "wal-link")))
	db := filepath.Join(dir, "reso.db")
	hidden := strings.Join([]string{db, db + "-wal", db + "-shm", db + "-journal", filepath.Join(dir, "secret")}, "\n")
	return dir, hidden
}

// names returns the names of a listing.
func names(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, n := range v.(core.Node).Content.(core.List) {
		out = append(out, n.(core.Node).Content.(core.Record)[0].Value.(string))
	}
	return out
}

// fetch downloads path and returns its bytes.
func fetch(t *testing.T, d *download, path string) (string, error) {
	t.Helper()
	resp, err := d.Handle(context.Background(), &core.Request{Method: "GET", Path: path})
	if err != nil {
		return "", err
	}
	c := resp.Content
	defer c.ReaderAt.(io.Closer).Close()
	b, err := io.ReadAll(io.NewSectionReader(c.ReaderAt, 0, c.Size))
	if err != nil {
		t.Fatalf("%s: reading: %v", path, err)
	}
	return string(b), nil
}

func TestHiddenStateFiles(t *testing.T) {
	dir, hidden := stateDir(t)
	fsys := testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir, plugins.SettingHidden: hidden}))
	l, d := &listing{fsys}, &download{fsys}

	v, err := l.Get(context.Background(), &core.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, v), []string{"ok.txt", "sub"}; !slices.Equal(got, want) {
		t.Errorf("listing %q, want %q", got, want)
	}
	v, err = l.Get(context.Background(), &core.Request{Path: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, v), []string{"reso.db"}; !slices.Equal(got, want) {
		t.Errorf("listing of sub %q, want %q", got, want)
	}

	for _, name := range []string{"reso.db", "reso.db-wal", "secret", "other.bin", "wal-link", "reso.db-shm", "./reso.db", "sub/../reso.db"} {
		if _, err := fetch(t, d, name); err != core.ErrNotFound {
			t.Errorf("%s: %v, want %v", name, err, core.ErrNotFound)
		}
	}
	for name, want := range map[string]string{"ok.txt": "ok", "sub/reso.db": "not the database"} {
		if got, err := fetch(t, d, name); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", name, got, err, want)
		}
	}

	// A companion that appears while the server runs is refused at once,
	// though the setting is cached.
	if err := os.WriteFile(filepath.Join(dir, "reso.db-journal"), []byte("journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(t, d, "reso.db-journal"); err != core.ErrNotFound {
		t.Errorf("new journal: %v, want %v", err, core.ErrNotFound)
	}
	v, _ = l.Get(context.Background(), &core.Request{})
	if got := names(t, v); slices.Contains(got, "reso.db-journal") {
		t.Errorf("listing %q shows the new journal", got)
	}
	// One that is gone and replaced by an ordinary file of another name
	// leaves that file served.
	if err := os.Remove(filepath.Join(dir, "reso.db-journal")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "later.txt"), []byte("later"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := fetch(t, d, "later.txt"); err != nil || got != "later" {
		t.Errorf("later.txt: %q %v", got, err)
	}
}

// A state file elsewhere than the served directory is refused through a
// link into it too.
func TestHiddenOutsideDirectory(t *testing.T) {
	state := t.TempDir()
	db := filepath.Join(state, "reso.db")
	if err := os.WriteFile(db, []byte("database"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Link(db, filepath.Join(dir, "copy")); err != nil {
		t.Fatal(err)
	}
	d := &download{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir, plugins.SettingHidden: db}))}
	if _, err := fetch(t, d, "copy"); err != core.ErrNotFound {
		t.Errorf("hard link: %v, want %v", err, core.ErrNotFound)
	}
}

// failingHost fails every setting.
type failingHost struct{ *pluginhost.SettingsMap }

func (failingHost) Setting(context.Context, string) (string, error) {
	return "", errors.New("host gone")
}

// The plugin refuses rather than guesses: when the setting or a state
// file cannot be read, nothing is served, and the error names no path.
func TestHiddenFailsClosed(t *testing.T) {
	dir, _ := stateDir(t)
	d := &download{testFS(failingHost{pluginhost.NewSettings(nil)})}
	if _, err := fetch(t, d, "ok.txt"); err == nil {
		t.Error("served without the setting")
	}
	long := filepath.Join(dir, strings.Repeat("x", 300)) // ENAMETOOLONG
	d = &download{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir, plugins.SettingHidden: long}))}
	_, err := fetch(t, d, "ok.txt")
	if _, isStatus := core.AsStatus(err); err == nil || isStatus || strings.Contains(err.Error(), dir) {
		t.Errorf("unreadable state file: %v, want an error without its path", err)
	}
	l := &listing{d.fs}
	if _, err := l.Get(context.Background(), &core.Request{}); err == nil {
		t.Error("listed with an unreadable state file")
	}
}
