// Package authtest holds checks that every login store of package auth
// must pass (sqlitestore, natsstore), for their tests.
package authtest

import (
	"context"
	"errors"
	"testing"

	"github.com/reso-project/reso/middleware/auth"
)

// GuardStore is a login store that is also an [auth.TokenGuard].
type GuardStore interface {
	auth.Store
	auth.TokenGuard
}

// TokenGuard checks, on record id of a@b (realm localhost) with the hash
// "h4", that a new hash empties the token in the same write and that
// SetTokenIfHash writes only over the hash given. other is another
// handle on the same records (another node's), or s itself; the writes
// are shared between them. The record ends with the hash "h4" again.
func TokenGuard(t testing.TB, s, other GuardStore, id int64) {
	t.Helper()
	ctx := context.Background()
	if ok, err := s.SetTokenIfHash(ctx, id, "h1", "stale"); ok || err != nil {
		t.Errorf("SetTokenIfHash over another hash = %v, %v", ok, err)
	}
	if ok, err := other.SetTokenIfHash(ctx, id, "h4", "tok"); !ok || err != nil {
		t.Errorf("SetTokenIfHash over its hash = %v, %v", ok, err)
	}
	if _, err := other.Register(ctx, "a@b", "localhost", "h4"); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.ByID(ctx, id); rec.Token != "tok" {
		t.Errorf("token %q after Register with the same hash", rec.Token)
	}
	if _, err := other.Register(ctx, "a@b", "localhost", "h5"); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.ByID(ctx, id); rec.Token != "" || rec.Hash != "h5" {
		t.Errorf("after Register with a new hash: %+v, want the token emptied", rec)
	}
	if ok, err := s.SetTokenIfHash(ctx, id, "h4", "stale"); ok || err != nil {
		t.Errorf("SetTokenIfHash over the replaced hash = %v, %v", ok, err)
	}
	if rec, _ := s.ByID(ctx, id); rec.Token != "" {
		t.Errorf("token %q written over the replaced hash", rec.Token)
	}
	if ok, err := s.SetTokenIfHash(ctx, 99, "h4", "x"); ok || !errors.Is(err, auth.ErrNoRecord) {
		t.Errorf("SetTokenIfHash(99) = %v, %v", ok, err)
	}
	if _, err := other.Register(ctx, "a@b", "localhost", "h4"); err != nil {
		t.Fatal(err)
	}
}
