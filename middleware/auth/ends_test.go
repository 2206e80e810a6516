package auth

import (
	"context"
	"slices"
	"testing"
)

// TestOnEndWithoutLog checks that with a store that logs no changes (not
// a Changer) the authenticator reports the ends it causes itself: a new
// password, and not the same password again; Watch returns at once.
func TestOnEndWithoutLog(t *testing.T) {
	f := newFixture(t, nil)
	var ended []string
	f.a.OnEnd(func(email string) { ended = append(ended, email) })
	ctx := context.Background()
	if err := f.a.Watch(ctx, 0); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	old, _ := f.a.Lookup(ctx, testEmail)
	if _, err := f.a.Register(ctx, testEmail, testPassword); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Register(ctx, testEmail, "other"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ended, []string{testEmail}) {
		t.Errorf("ended %q, want [%s]", ended, testEmail)
	}
	// The clock did not move: the new token must still differ.
	if cur, _ := f.a.Lookup(ctx, testEmail); cur.Token == old.Token || !validToken(testSecret, cur.ID, cur.Token) {
		t.Errorf("token after the new password %q, before %q", cur.Token, old.Token)
	}
}
