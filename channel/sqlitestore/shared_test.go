package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	authstore "github.com/reso-project/reso/middleware/auth/sqlitestore"
)

// TestSharedFile checks that the channel's tables live beside the login
// table in one -db file, both stores open at once and after a restart,
// when the login store opens the file first (as cmd/reso must: the login
// store refuses a non-empty file without its table).
func TestSharedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	for round := 0; round < 2; round++ {
		a, err := authstore.Open(ctx, path)
		if err != nil {
			t.Fatalf("round %d: login store: %v", round, err)
		}
		if _, err := a.Register(ctx, "u@example.com", "r", "hash"); err != nil {
			t.Fatal(err)
		}
		tr, st := start(t, path)
		got := tr.Call(ctx, "", "", []byte(`{"method":"PUT","resource":"/shared","msg_id":1}`))
		if string(got) != `{"msg_id":1,"code":"success"}` {
			t.Fatalf("round %d: put: %s", round, got)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSharedFileChannelFirst: a file that holds only the channel's tables
// is reso's, and the login store opens it too.
func TestSharedFileChannelFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reso.db")
	tr, st := start(t, path)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := authstore.Open(ctx, path)
	if err != nil {
		t.Fatalf("login store after the channel's: %v", err)
	}
	if _, err := a.Register(ctx, "u@example.com", "r", "hash"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
