package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/reso-project/reso/middleware/auth"
)

// TestSessionsEndAcrossProcesses checks that a server watching the store
// ends a user's sessions at once when another writer of the same file (as
// reso user remove and reso user passwd are) removes the user or changes
// its password: its OnEnd functions are told, and its cookie is refused
// without a restart. Changes of another realm and unrelated writes tell
// nobody.
func TestSessionsEndAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "reso.db")
	open := func() *Store {
		st, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	srv := newAuthServer(t, open(), testSecret, nil)
	ended := make(chan string, 8)
	srv.a.OnEnd(func(email string) { ended <- email })
	watched := make(chan error, 1)
	go func() { watched <- srv.a.Watch(ctx, 10*time.Millisecond) }()

	// The other process: the CLI's authenticator on its own connection.
	cli, err := auth.New(auth.Config{Store: open(), Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.New(auth.Config{Store: open(), Secret: testSecret, Realm: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	login := func(email, pw string) string {
		t.Helper()
		if _, err := srv.a.Register(ctx, email, pw); err != nil {
			t.Fatal(err)
		}
		code, tok := srv.get(t, "/", email, pw, "")
		rec, _ := srv.a.Lookup(ctx, email)
		if code != 200 || tok == "" {
			t.Fatalf("login %s: %d", email, code)
		}
		cookie := fmt.Sprintf("user_id=%d; token=%s", rec.ID, tok)
		if code, _ := srv.get(t, "/", "", "", cookie); code != 200 {
			t.Fatalf("cookie of %s: %d", email, code)
		}
		return cookie
	}
	wantEnded := func(email string) {
		t.Helper()
		select {
		case got := <-ended:
			if got != email {
				t.Fatalf("ended %q, want %q", got, email)
			}
		case <-time.After(15 * time.Second): // a hang guard
			t.Fatalf("the sessions of %s did not end", email)
		}
	}
	gone, moved, kept := login("gone@example.com", "pw"), login("moved@example.com", "pw"), login("kept@example.com", "pw")
	// Writes that end no session: another realm, the same password again.
	if _, err := other.Register(ctx, "kept@example.com", "x"); err != nil {
		t.Fatal(err)
	}
	if err := other.Remove(ctx, "kept@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Register(ctx, "kept@example.com", "pw"); err != nil {
		t.Fatal(err)
	}

	if err := cli.Remove(ctx, "gone@example.com"); err != nil {
		t.Fatal(err)
	}
	wantEnded("gone@example.com")
	if code, _ := srv.get(t, "/", "", "", gone); code != 401 {
		t.Errorf("the removed user's cookie: %d, want 401", code)
	}
	if _, err := cli.Register(ctx, "moved@example.com", "new"); err != nil {
		t.Fatal(err)
	}
	wantEnded("moved@example.com")
	if code, _ := srv.get(t, "/", "", "", moved); code != 401 {
		t.Errorf("the old password's cookie: %d, want 401", code)
	}
	if code, _ := srv.get(t, "/", "moved@example.com", "new", ""); code != 200 {
		t.Errorf("the new password: %d", code)
	}
	if code, _ := srv.get(t, "/", "", "", kept); code != 200 {
		t.Errorf("an unchanged user's cookie: %d", code)
	}
	select {
	case e := <-ended:
		t.Errorf("ended %q too", e)
	default:
	}
	cancel()
	if err := <-watched; err != context.Canceled {
		t.Errorf("Watch: %v", err)
	}
}
