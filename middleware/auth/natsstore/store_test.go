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
	"github.com/reso-project/reso/middleware/auth/authtest"
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
	if rec, err := s.ByEmail(ctx, "a@b", "localhost"); err != nil || rec != (auth.LoginRecord{ID: id, Email: "a@b", Realm: "localhost", Hash: "h4"}) {
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
	authtest.TokenGuard(t, s, s2, id)
	if err := s.SetToken(ctx, id, "tok"); err != nil {
		t.Fatal(err)
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

// TestNotify: a node following the bucket is told, in order, of every
// write of a record by another node (Written, with its hash and token),
// of a new password and of a removal (an end, with the e-mail), and
// first that it follows (All).
func TestNotify(t *testing.T) {
	cl := natstest.Start(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	s, s2 := open(t, cl, "n"), open(t, cl, "n")
	changes := make(chan auth.Change, 64)
	stopped := make(chan error, 1)
	go func() { stopped <- s2.Notify(ctx, func(c auth.Change) { changes <- c }) }()
	defer func() {
		cancel()
		if err := <-stopped; !errors.Is(err, context.Canceled) {
			t.Errorf("Notify = %v", err)
		}
	}()
	next := func() auth.Change {
		t.Helper()
		select {
		case c := <-changes:
			c.Seq = 0
			return c
		case <-time.After(30 * time.Second):
			t.Fatal("no change reported within 30 s")
			return auth.Change{}
		}
	}
	if c := next(); !c.All {
		t.Fatalf("first change %+v, want All", c)
	}
	id, err := s.Register(ctx, "a@b", "localhost", "h1")
	if err != nil {
		t.Fatal(err)
	}
	written := func(hash, token string) auth.Change {
		return auth.Change{ID: id, Email: "a@b", Realm: "localhost", Written: true, Hash: hash, Token: token}
	}
	if c := next(); c != written("h1", "") {
		t.Fatalf("after Register: %+v", c)
	}
	if err := s.SetToken(ctx, id, "t1"); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != written("h1", "t1") {
		t.Fatalf("after SetToken: %+v", c)
	}
	if _, err := s.Register(ctx, "a@b", "localhost", "h1"); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != written("h1", "t1") {
		t.Fatalf("after Register with the same hash: %+v", c)
	}
	if _, err := s.Register(ctx, "a@b", "localhost", "h2"); err != nil {
		t.Fatal(err)
	}
	ended := auth.Change{ID: id, Email: "a@b", Realm: "localhost"}
	if c1, c2 := next(), next(); c1 != written("h2", "") || c2 != ended {
		t.Fatalf("after Register with a new hash: %+v, %+v", c1, c2)
	}
	if _, err := s.Remove(ctx, "a@b", "localhost"); err != nil {
		t.Fatal(err)
	}
	if c1, c2 := next(), next(); c1 != (auth.Change{ID: id}) || c2 != ended {
		t.Fatalf("after Remove: %+v, %+v", c1, c2)
	}
}

// TestUnavailable: with the cluster down, a read and a write of the store
// fail with auth.ErrUnavailable in their chain (the request answered 503
// Login Store Unavailable, not 500), and a cancelled request stays
// cancelled.
func TestUnavailable(t *testing.T) {
	cl := natstest.Start(t, 3)
	s := open(t, cl, "down")
	ctx := t.Context()
	id, err := s.Register(ctx, "a@b", "localhost", "h1")
	if err != nil {
		t.Fatal(err)
	}
	cl.StopAll()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := s.ByEmail(short, "a@b", "localhost"); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("ByEmail with the cluster down: %v, want auth.ErrUnavailable in its chain", err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if err := s.SetToken(short2, id, "tok"); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("SetToken with the cluster down: %v, want auth.ErrUnavailable in its chain", err)
	}
	gone, stop := context.WithCancel(ctx)
	stop()
	if _, err := s.ByID(gone, id); err == nil || errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("ByID of a cancelled request: %v, want its cancellation alone", err)
	}
}
