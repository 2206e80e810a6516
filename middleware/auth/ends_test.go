package auth

import (
	"context"
	"fmt"
	"net/http/httptest"
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

// TestEndedSince: the identity of a successful check carries the mark of
// the ends so far; EndedSince reports an end of its e-mail after the mark,
// not one before it nor another user's, never for the mark 0, and always
// once more ends came after the mark than it remembers.
func TestEndedSince(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.a.Register(ctx, "bob@example.com", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Register(ctx, "bob@example.com", "bob 2"); err != nil { // an end before the check
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(testEmail, testPassword)
	res, err := f.a.Check(r)
	if err != nil || res.Identity == nil || res.Identity.Checked == 0 {
		t.Fatalf("Check = %+v, %v; want an identity with a mark", res.Identity, err)
	}
	mark := res.Identity.Checked
	if f.a.EndedSince(testEmail, mark) || f.a.EndedSince("bob@example.com", mark) {
		t.Fatal("an end before the check reported after it")
	}
	if _, err := f.a.Register(ctx, "bob@example.com", "bob 3"); err != nil {
		t.Fatal(err)
	}
	if f.a.EndedSince(testEmail, mark) || !f.a.EndedSince("bob@example.com", mark) {
		t.Fatal("another user's end reported, or bob's missed")
	}
	if _, err := f.a.Register(ctx, testEmail, "new password"); err != nil {
		t.Fatal(err)
	}
	if !f.a.EndedSince(testEmail, mark) || f.a.EndedSince(testEmail, 0) {
		t.Fatal("the end after the check missed, or reported for the mark 0")
	}
	res, err = f.a.Check(r)
	if err == nil {
		t.Fatalf("the old password after the new one: %+v", res.Identity)
	}
	r.SetBasicAuth(testEmail, "new password")
	if res, err = f.a.Check(r); err != nil || f.a.EndedSince(testEmail, res.Identity.Checked) {
		t.Fatalf("a check after the end: %v, ended since %d", err, res.Identity.Checked)
	}
	later := res.Identity.Checked
	for i := range endLogSize {
		f.a.ended(fmt.Sprint("u", i))
	}
	if f.a.EndedSince(testEmail, later) {
		t.Fatal("an end reported among endLogSize others")
	}
	f.a.ended("one more")
	if !f.a.EndedSince(testEmail, later) {
		t.Fatal("more ends than remembered after the mark, and not reported")
	}
}
