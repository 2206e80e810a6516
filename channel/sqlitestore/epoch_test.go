package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"testing"
)

// TestEpoch checks the epoch of the history a database file keeps
// (docs/channel.md#replay-after-a-reconnect): 16 hex digits drawn when the
// file gets its tables, the same after reopening it (and in the tree's
// SUBSCRIBE reply), another one for another file and for every
// ":memory:" database; a file of a reso from before epochs gets one at its
// next Open and keeps it.
func TestEpoch(t *testing.T) {
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	dir := t.TempDir()
	path := filepath.Join(dir, "reso.db")
	tr, st := start(t, path)
	first := st.Epoch()
	if !hex16.MatchString(first) || tr.Epoch() != first {
		t.Fatalf("epoch %q, the tree's %q", first, tr.Epoch())
	}
	c, _ := tr.Connect("c1", "")
	if got := exec(t, c, `{"method":"SUBSCRIBE","resource":"/r","since":0,"msg_id":1}`); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success","recovered":true,"epoch":"`+first+`"}` {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	c.Disconnect()
	tr.Close()
	st.Close()

	tr, st = start(t, path)
	if st.Epoch() != first || tr.Epoch() != first {
		t.Errorf("after reopening the file: %q (the tree's %q), want %q", st.Epoch(), tr.Epoch(), first)
	}
	tr.Close()
	st.Close()

	other, ost := start(t, filepath.Join(dir, "other.db"))
	if e := ost.Epoch(); !hex16.MatchString(e) || e == first {
		t.Errorf("a new file: epoch %q, the first file's %q", e, first)
	}
	other.Close()
	ost.Close()

	m1, err := Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	m2, err := Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m1.Epoch() == m2.Epoch() || !hex16.MatchString(m1.Epoch()) {
		t.Errorf(":memory: epochs %q and %q", m1.Epoch(), m2.Epoch())
	}

	// A file whose channel_meta has no epoch yet (an older reso's).
	old := filepath.Join(dir, "old.db")
	db, err := sql.Open("sqlite", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), schema+`;
		INSERT INTO channel_meta (key, value) VALUES ('last_seq', 70000)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s1, err := Open(old)
	if err != nil {
		t.Fatal(err)
	}
	e1 := s1.Epoch()
	s1.Close()
	s2, err := Open(old)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !hex16.MatchString(e1) || s2.Epoch() != e1 {
		t.Errorf("an older file: epoch %q, then %q", e1, s2.Epoch())
	}
	if _, last, err := s2.Load(context.Background()); err != nil || last != 70000 {
		t.Errorf("an older file's last seq: %d, %v", last, err)
	}
}
