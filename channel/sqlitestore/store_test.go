package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reso-project/reso/channel"
)

// drain returns the frames queued for c without waiting.
func drain(t testing.TB, c *channel.Client) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fs, err := c.Next(ctx, nil)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("next: %v", err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Data))
	}
	return out
}

// start opens the database at path and a tree over it.
func start(t *testing.T, path string) (*channel.Tree, *Store) {
	t.Helper()
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := channel.New(context.Background(), st, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, st
}

// exec sends msgs as c and returns what c then holds.
func exec(t *testing.T, c *channel.Client, msgs ...string) []string {
	t.Helper()
	for _, m := range msgs {
		c.Exec(context.Background(), []byte(m))
	}
	return drain(t, c)
}

// TestRestart checks that persistent resources survive a restart with
// their order, private fields and intermediate nodes, that transient ones
// do not, and that seq continues.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reso.db")
	tr, st := start(t, path)
	c, _ := tr.Connect("c1", "alice")
	exec(t, c,
		`{"method":"PUT","resource":"/rooms/b","persistent":true,"entity":{"z":1,"_p":2,"a":3}}`,
		`{"method":"PUT","resource":"/rooms/a","persistent":true,"type":"text/x","entity":"x"}`,
		`{"method":"PUT","resource":"/rooms/t","entity":1}`,
		`{"method":"PUT","resource":"/deep/x/y","persistent":true}`,
		`{"method":"PUT","resource":"/gone","persistent":true}`,
		`{"method":"DELETE","resource":"/gone"}`,
		`{"method":"PUT","resource":"/was","persistent":true}`,
		`{"method":"PUT","resource":"/was","entity":5}`, // transient now
	)
	if got := tr.Call(context.Background(), "", "bob", []byte(`{"method":"PUT","resource":"/http","entity":[1]}`)); string(got) != `{"code":"success"}` {
		t.Fatalf("call: %s", got)
	}
	if got := tr.Call(context.Background(), "", "bob", []byte(`{"method":"PUT","resource":"/lease","entity":[1],"expires":60}`)); string(got) != `{"code":"success"}` {
		t.Fatalf("call: %s", got)
	}
	c.Disconnect()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	tr, st = start(t, path)
	defer st.Close()
	defer tr.Close()
	c, _ = tr.Connect("c2", "")
	got := exec(t, c,
		`{"method":"GET","resource":"/rooms","msg_id":1}`,
		`{"method":"GET","resource":"/rooms/b","msg_id":2}`,
		`{"method":"GET","resource":"/rooms/t","msg_id":3}`,
		`{"method":"GET","resource":"/deep/x/y","msg_id":4}`,
		`{"method":"GET","resource":"/","msg_id":5}`,
		`{"method":"GET","resource":"/rooms/a","msg_id":6}`,
		`{"method":"SUBSCRIBE","resource":"/n"}`,
		`{"method":"NOTIFY","resource":"/n"}`,
	)
	want := []string{
		`{"msg_id":1,"code":"success","resource":"/rooms","type":"application/json","entity":["b","a"]}`,
		`{"msg_id":2,"code":"success","resource":"/rooms/b","type":"application/json","entity":{"z":1,"a":3}}`,
		`{"msg_id":3,"code":"failed","reason":"not found"}`,
		`{"msg_id":4,"code":"success","resource":"/deep/x/y","type":"application/json","entity":{}}`,
		`{"msg_id":5,"code":"success","resource":"/","type":"application/json","entity":["rooms","deep","http"]}`,
		`{"msg_id":6,"code":"success","resource":"/rooms/a","type":"text/x","entity":"x"}`,
		// 12 changes before the restart (two PUTs by Call and two DELETEs by
		// the disconnect included): seq goes on from there.
		`{"notify":"NOTIFY","resource":"/n","data":null,"from":"c2","seq":13}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after restart:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The private field is kept in the store.
	var entity string
	if err := st.db.QueryRow("SELECT entity FROM channel_resources WHERE path = '/rooms/b'").Scan(&entity); err != nil || entity != `{"z":1,"_p":2,"a":3}` {
		t.Fatalf("stored entity %q, %v", entity, err)
	}
}

// TestMemory checks that ":memory:" works and keeps nothing.
func TestMemory(t *testing.T) {
	tr, st := start(t, ":memory:")
	c, _ := tr.Connect("c", "")
	if got := exec(t, c, `{"method":"PUT","resource":"/a","persistent":true,"msg_id":1}`); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success"}` {
		t.Fatalf("put: %q", got)
	}
	tr.Close()
	st.Close()
	tr, st = start(t, ":memory:")
	defer st.Close()
	defer tr.Close()
	c, _ = tr.Connect("c", "")
	if got := exec(t, c, `{"method":"GET","resource":"/a","msg_id":1}`); got[0] != `{"msg_id":1,"code":"failed","reason":"not found"}` {
		t.Fatalf("get: %q", got)
	}
}

// TestRulesColumns checks that the rules, group and owner of a resource
// survive a restart, and that a table made before they existed gets their
// columns at Open, its rows kept.
func TestRulesColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reso.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// The table as an older reso made it.
	for _, q := range []string{
		"DROP TABLE channel_resources",
		"CREATE TABLE channel_resources (path TEXT PRIMARY KEY, type TEXT NOT NULL DEFAULT '', entity BLOB, creator TEXT NOT NULL DEFAULT '', created INTEGER NOT NULL)",
		`INSERT INTO channel_resources VALUES ('/m', 'application/json', '{"old":1}', '', 1)`,
	} {
		if _, err := st.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	tr, st := start(t, path)
	c, _ := tr.Connect("c1", "alice@example.com")
	got := exec(t, c,
		`{"method":"PUT","resource":"/m/r","persistent":true,"entity":1}`,
		`{"method":"RULES","resource":"/m/r","rules":"self:cruds group:rs","group":["bob@example.com"],"msg_id":1}`,
		`{"method":"PUT","resource":"/m/s","persistent":true,"entity":1}`,
		`{"method":"RULES","resource":"/m/s","group":[],"owner":"dave@example.com","msg_id":2}`,
	)
	if len(got) != 2 {
		t.Fatalf("RULES: %q", got)
	}
	c.Disconnect()
	tr.Close()
	st.Close()

	tr, st = start(t, path)
	defer st.Close()
	defer tr.Close()
	admin, _ := tr.Connect("admin", channel.Admin)
	got = exec(t, admin,
		`{"method":"GET","resource":"/m","msg_id":0}`,
		`{"method":"RULES","resource":"/m/r","msg_id":1}`,
		`{"method":"RULES","resource":"/m/s","msg_id":2}`,
	)
	want := []string{
		`{"msg_id":0,"code":"success","resource":"/m","type":"application/json","entity":{"old":1}}`,
		`{"msg_id":1,"code":"success","resource":"/m/r","rules":"self:cruds group:rs","group":["bob@example.com"],"owner":"alice@example.com","effective":"self:cruds group:rs auth:- anon:-"}`,
		`{"msg_id":2,"code":"success","resource":"/m/s","rules":"","group":[],"owner":"dave@example.com","effective":"self:cruds group:cruds auth:cruds anon:cruds"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after restart:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckpointPages checks that the store's connection copies the
// write-ahead log into the database only past checkpointPages.
func TestCheckpointPages(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "reso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var pages int
	if err := st.db.QueryRow("PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != checkpointPages {
		t.Fatalf("wal_autocheckpoint %d, want %d", pages, checkpointPages)
	}
}

// TestSync checks SQLite's synchronous setting on the store's connection
// (the one that writes): 1 (NORMAL) by Open and OpenSync with SyncNormal,
// 2 (FULL) with SyncFull, in WAL mode either way.
func TestSync(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(path string) (*Store, error)
		want int
	}{
		{"Open", Open, 1},
		{"OpenSync normal", func(p string) (*Store, error) { return OpenSync(p, SyncNormal) }, 1},
		{"OpenSync full", func(p string) (*Store, error) { return OpenSync(p, SyncFull) }, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := c.open(filepath.Join(t.TempDir(), "reso.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var sync int
			var mode string
			if err := st.db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
				t.Fatal(err)
			}
			if err := st.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if sync != c.want || mode != "wal" {
				t.Fatalf("synchronous %d, journal_mode %q; want %d, wal", sync, mode, c.want)
			}
			got, err := st.Synchronous(context.Background())
			if err != nil || int(got)+1 != c.want {
				t.Fatalf("Synchronous: %v, %v; want %d", got, err, c.want)
			}
		})
	}
	if _, err := OpenSync(filepath.Join(t.TempDir(), "reso.db"), Sync(7)); err == nil || !strings.Contains(err.Error(), "unknown sync setting 7") {
		t.Fatalf("OpenSync with Sync(7): %v, want an error", err)
	}
}
