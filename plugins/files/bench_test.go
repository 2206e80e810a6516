package files

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// BenchmarkDownload measures a whole small download (open, check, read,
// close) without and with the server's state files to refuse, to show what
// stat'ing them afresh for every request costs.
func BenchmarkDownload(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("hello, world\n"), 0o644)
	db := filepath.Join(dir, "reso.db")
	os.WriteFile(db, []byte("x"), 0o600)
	os.WriteFile(db+"-wal", []byte("x"), 0o600)
	os.WriteFile(db+"-shm", []byte("x"), 0o600)
	for _, bc := range []struct{ name, hidden string }{
		{"none", ""},
		{"state", strings.Join([]string{db, db + "-wal", db + "-shm", db + "-journal", filepath.Join(dir, "secret")}, "\n")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := &download{testFS(pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: dir, plugins.SettingHidden: bc.hidden}))}
			req := &core.Request{Method: "GET", Path: "f"}
			buf := make([]byte, 32<<10)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := d.Handle(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				c := resp.Content
				if _, err := c.ReaderAt.ReadAt(buf[:c.Size], 0); err != nil && err != io.EOF {
					b.Fatal(err)
				}
				c.ReaderAt.(io.Closer).Close()
			}
		})
	}
}

// BenchmarkReadAt compares a bounded read of 32 KiB with a plain one.
func BenchmarkReadAt(b *testing.B) {
	p := filepath.Join(b.TempDir(), "f")
	os.WriteFile(p, make([]byte, 1<<20), 0o644)
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 32<<10)
	for _, bc := range []struct {
		name string
		ra   io.ReaderAt
	}{
		{"plain", f},
		{"bounded", &boundedFile{f: f, lim: newLimiter(0, 0)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if _, err := bc.ra.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
				off = (off + int64(len(buf))) % (1 << 20)
			}
		})
	}
}

// BenchmarkStatHidden measures the stat of the five state files a server
// with a database and a secret names, three of them present.
func BenchmarkStatHidden(b *testing.B) {
	dir := b.TempDir()
	db := filepath.Join(dir, "reso.db")
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	paths := []string{db, db + "-wal", db + "-shm", db + "-journal", filepath.Join(dir, "secret")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := statHidden(paths); err != nil {
			b.Fatal(err)
		}
	}
}
