package natsstore

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/middleware/auth"
)

// open opens the store of fleet over a new connection to cl.
func open(t *testing.T, cl *natstest.Cluster, fleet string) *Store {
	t.Helper()
	nc, err := nats.Connect(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, nc, fleet, 3)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStore runs the auth.Store contract against a real three-server
// JetStream cluster, with two nodes' stores writing at once.
func TestStore(t *testing.T) {
	cl := natstest.Start(t, 3)
	ctx := t.Context()
	s, s2 := open(t, cl, "a"), open(t, cl, "a")
	if l, err := s.List(ctx, "localhost"); err != nil || len(l) != 0 {
		t.Fatalf("List of an empty bucket = %v, %v", l, err)
	}
	id, err := s.Register(ctx, "a@b", "localhost", "h1")
	if err != nil || id != 1 {
		t.Fatalf("Register = %d, %v; want 1", id, err)
	}
	id2, _ := s2.Register(ctx, "c@d", "localhost", "h2")
	id3, _ := s.Register(ctx, "a@b", "other", "h3")
	if again, _ := s2.Register(ctx, "a@b", "localhost", "h4"); again != id || id2 == id || id3 == id || id3 == id2 {
		t.Fatalf("ids %d %d %d %d", id, id2, id3, again)
	}
	if rec, err := s.ByEmail(ctx, "a@b", "localhost"); err != nil || rec != (auth.Record{ID: id, Email: "a@b", Realm: "localhost", Hash: "h4"}) {
		t.Fatalf("ByEmail = %+v, %v", rec, err)
	}
	if err := s.SetToken(ctx, id, "tok"); err != nil {
		t.Fatal(err)
	}
	if rec, err := s2.ByID(ctx, id); err != nil || rec.Token != "tok" || rec.Hash != "h4" {
		t.Errorf("ByID on the other node = %+v, %v", rec, err)
	}
	if err := s.SetToken(ctx, 99, "x"); !errors.Is(err, auth.ErrNoRecord) {
		t.Errorf("SetToken(99) = %v", err)
	}
	if _, err := s.ByEmail(ctx, "a@b", "nowhere"); !errors.Is(err, auth.ErrNoRecord) {
		t.Errorf("ByEmail in another realm = %v", err)
	}
	if ok, err := s.ClearToken(ctx, id, "other"); ok || err != nil {
		t.Errorf("ClearToken(other) = %v, %v", ok, err)
	}
	if ok, err := s2.ClearToken(ctx, id, "tok"); !ok || err != nil {
		t.Errorf("ClearToken(tok) = %v, %v", ok, err)
	}
	if ok, _ := s.ClearToken(ctx, id, "tok"); ok {
		t.Error("ClearToken twice reported two changes")
	}
	l, err := s2.List(ctx, "localhost")
	if err != nil || len(l) != 2 || l[0].ID != id || l[1].ID != id2 {
		t.Fatalf("List = %+v, %v", l, err)
	}
	if rid, err := s2.Remove(ctx, "c@d", "localhost"); err != nil || rid != id2 {
		t.Fatalf("Remove = %d, %v", rid, err)
	}
	if _, err := s.ByEmail(ctx, "c@d", "localhost"); !errors.Is(err, auth.ErrNoRecord) {
		t.Fatalf("ByEmail after Remove = %v", err)
	}
	if _, err := s.Remove(ctx, "c@d", "localhost"); !errors.Is(err, auth.ErrNoRecord) {
		t.Fatalf("Remove twice = %v", err)
	}

	// Nodes registering the same new user at once agree on its id; new
	// users get distinct ids.
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			var err error
			ids[i], err = st.Register(ctx, "race@x", "localhost", "h")
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, v := range ids[1:] {
		if v != ids[0] {
			t.Fatalf("one user, ids %v", ids)
		}
	}

	// One instance secret for the fleet, whoever asks first.
	var secrets [4][]byte
	for i := range secrets {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			var err error
			if secrets[i], err = st.Secret(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, sec := range secrets[1:] {
		if len(sec) != 64 || !bytes.Equal(sec, secrets[0]) {
			t.Fatalf("secrets %q", secrets)
		}
	}
}
