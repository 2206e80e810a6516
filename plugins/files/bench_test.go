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
