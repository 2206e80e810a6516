package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStateFilesNotServed: the server's own state files (the login
// database with its -wal and -shm companions, the secret file) are never
// listed or served, even with -db and -secret-file inside the served
// directory, and neither are a hard link or a symbolic link to them; a file
// merely named reso.db is served.
func TestStateFilesNotServed(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		writeFixtures(t, dir)
		// Relative paths, as the old default -db reso.db was.
		s, err := startIn(t, dir, m, "-db", "reso.db", "-secret-file", "secret", "-login", "user@example.org:example")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.stop()
			if t.Failed() {
				t.Logf("server log:\n%s", s.Log())
			}
		})
		// A login writes to the database, so that its WAL exists.
		if got := s.get(t, "/private/x", authBasic("user@example.org", "example")); got.StatusLine != ok200 {
			t.Fatalf("login: %q %q", got.StatusLine, got.Body)
		}
		for _, name := range []string{"reso.db", "reso.db-wal", "reso.db-shm", "secret"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Logf("%s: %v (checked all the same)", name, err)
			}
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Link(filepath.Join(dir, "reso.db"), filepath.Join(dir, "other.bin")))
		must(os.Symlink("reso.db", filepath.Join(dir, "db-link")))
		must(os.Symlink("reso.db-wal", filepath.Join(dir, "wal-link")))
		must(os.Symlink("secret", filepath.Join(dir, "secret-link")))
		must(os.WriteFile(filepath.Join(dir, "sub", "reso.db"), []byte("not the database"), 0o644))

		check(t, s.get(t, "/files"), want{ok200, jsonCT, listingRoot})
		for _, name := range []string{
			"reso.db", "reso.db-wal", "reso.db-shm", "secret",
			"other.bin", "db-link", "wal-link", "secret-link", "sub/../reso.db",
		} {
			notFound(t, s.get(t, "/file/"+name), name)
		}
		check(t, s.get(t, "/file/sub/reso.db"), want{ok200, octCT, "not the database"})
		// The login still works: the database was only hidden.
		if got := s.get(t, "/private/y", authBasic("user@example.org", "example")); got.StatusLine != ok200 {
			t.Errorf("second login: %q %q", got.StatusLine, got.Body)
		}
	})
}

// notFound checks an answer 404 Not Found of the file plugin; on failure it
// shows only the start of a body that may be a leaked state file.
func notFound(t *testing.T, r response, what string) {
	t.Helper()
	w := errorWant("HTTP/1.1 404 Not Found")
	if r.StatusLine != w.status || r.Body != w.body {
		body := r.Body
		if len(body) > 40 {
			body = body[:40] + "..."
		}
		t.Errorf("%s: %q, body %q; want %q", what, r.StatusLine, body, w.status)
	}
}
