package dirfiles

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

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
