package auth

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// peer returns a fixture of another process over f's store and clock (a
// second node of a fleet), with its own authenticator and server.
func (f *fixture) peer(t testing.TB) *fixture {
	t.Helper()
	a, err := New(Config{Store: f.store, Secret: testSecret, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := &fixture{a: a, store: f.store, clock: f.clock, id: f.id}
	p.srv = newServer(t, p.handler())
	return p
}

// TestSharedStoreNewCredentials: two authenticators over one store, each
// with the record in memory: a token issued by one, and a password set by
// the other, are accepted by the first at once, although its memory held
// the old ones.
func TestSharedStoreNewCredentials(t *testing.T) {
	a := newFixture(t, nil)
	b := a.peer(t)
	id := fmt.Sprint(a.id)
	tokA := wantSession(t, a.get(t, "/", basic(testEmail, testPassword)), a.id)
	a.clock.Advance(time.Second)
	tokB := wantSession(t, b.get(t, "/", basic(testEmail, testPassword)), b.id)
	if tokA == tokB {
		t.Fatal("the same token in two seconds")
	}
	if r := a.get(t, "/", cookies(id, tokB)); r.status != "200 OK" {
		t.Fatalf("the token issued by the other process: %s", r.status)
	}

	a.clock.Advance(time.Second)
	if _, err := b.a.Register(context.Background(), testEmail, "new password"); err != nil {
		t.Fatal(err)
	}
	r := a.get(t, "/", basic(testEmail, "new password"))
	if r.status != "200 OK" {
		t.Fatalf("the password set by the other process: %s", r.status)
	}
	wantSession(t, r, a.id)
}

// TestSharedStoreStaleLogin: the other process gives the user a new
// password while this one still holds the record with the old one in
// memory: a login with the old password, which the copy in memory
// accepts, is refused (401 Unauthorized, no cookies) instead of issuing a
// session under the new password; the new password logs in.
func TestSharedStoreStaleLogin(t *testing.T) {
	for _, how := range []string{"basic", "route hash"} {
		t.Run(how, func(t *testing.T) {
			a := newFixture(t, nil)
			b := a.peer(t)
			wantSession(t, a.get(t, "/", basic(testEmail, testPassword)), a.id)
			a.clock.Advance(time.Second)
			if _, err := b.a.Register(context.Background(), testEmail, "new password"); err != nil {
				t.Fatal(err)
			}
			a.clock.Advance(time.Second)
			before, _ := a.store.ByID(context.Background(), a.id)
			var r result
			if how == "basic" {
				r = a.get(t, "/", basic(testEmail, testPassword))
			} else {
				r = a.get(t, "/e/"+testEmail+"/"+HashPassword(testEmail, a.a.Realm(), testPassword))
			}
			if r.status != "401 Unauthorized" || len(r.cookies) != 0 {
				t.Fatalf("the old password after the other process changed it: %s, cookies %v", r.status, r.cookies)
			}
			if rec, _ := a.store.ByID(context.Background(), a.id); rec.Token != before.Token {
				t.Errorf("the old password stored a token under the new one: %q, was %q", rec.Token, before.Token)
			}
			wantSession(t, a.get(t, "/", basic(testEmail, "new password")), a.id)
		})
	}
}

// notifyStore is a memStore that is a Notifier: every write is reported
// to the authenticators that follow it, as natsstore's watch of its
// bucket does.
type notifyStore struct {
	*memStore
	reads atomic.Int64

	mu   sync.Mutex
	subs []chan Change
	seq  int64
}

func (s *notifyStore) ByID(ctx context.Context, id int64) (LoginRecord, error) {
	s.reads.Add(1)
	return s.memStore.ByID(ctx, id)
}

func (s *notifyStore) ByEmail(ctx context.Context, email, realm string) (LoginRecord, error) {
	s.reads.Add(1)
	return s.memStore.ByEmail(ctx, email, realm)
}

// tell reports c to every follower.
func (s *notifyStore) tell(c Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	c.Seq = s.seq
	for _, ch := range s.subs {
		ch <- c
	}
}

// written reports the record id as it is now.
func (s *notifyStore) written(id int64) {
	rec, err := s.memStore.ByID(context.Background(), id)
	if err == nil {
		s.tell(Change{ID: id, Email: rec.Email, Realm: rec.Realm, Written: true, Hash: rec.Hash, Token: rec.Token})
	}
}

func (s *notifyStore) Register(ctx context.Context, email, realm, hash string) (int64, error) {
	old, oldErr := s.memStore.ByEmail(ctx, email, realm)
	id, err := s.memStore.Register(ctx, email, realm, hash)
	if err == nil {
		s.written(id)
		if oldErr == nil && old.Hash != hash {
			s.tell(Change{ID: id, Email: email, Realm: realm})
		}
	}
	return id, err
}

func (s *notifyStore) SetToken(ctx context.Context, id int64, token string) error {
	err := s.memStore.SetToken(ctx, id, token)
	if err == nil {
		s.written(id)
	}
	return err
}

func (s *notifyStore) SetTokenIfHash(ctx context.Context, id int64, hash, token string) (bool, error) {
	ok, err := s.memStore.SetTokenIfHash(ctx, id, hash, token)
	if ok {
		s.written(id)
	}
	return ok, err
}

func (s *notifyStore) ClearToken(ctx context.Context, id int64, token string) (bool, error) {
	ok, err := s.memStore.ClearToken(ctx, id, token)
	if ok {
		s.written(id)
	}
	return ok, err
}

func (s *notifyStore) Notify(ctx context.Context, f func(Change)) error {
	ch := make(chan Change, 64)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	f(Change{All: true})
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c := <-ch:
			f(c)
		}
	}
}

var _ Notifier = (*notifyStore)(nil)

// TestNotifierWatch: an authenticator that follows a Notifier forgets what
// another process replaced: its old token and its old password are
// refused, and a new password tells the OnEnd functions; a record written
// as it is in memory (its own login) costs no read.
func TestNotifierWatch(t *testing.T) {
	st := &notifyStore{memStore: newMemStore()}
	a := newFixture(t, func(c *Config) { c.Store = st })
	a.store = st
	b := a.peer(t)
	ended := make(chan string, 4)
	a.a.OnEnd(func(email string) { ended <- email })
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- a.a.Watch(ctx, time.Millisecond) }()
	defer func() {
		cancel()
		if err := <-watched; err != context.Canceled {
			t.Errorf("Watch = %v", err)
		}
	}()
	// settle waits until the watch has applied every change told so far:
	// it forgets a marker record told after them.
	settle := func() {
		t.Helper()
		const marker = 1 << 40
		a.a.cache.put(LoginRecord{ID: marker, Email: "marker", Realm: "marker"})
		st.tell(Change{ID: marker})
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, ok := a.a.cache.id(marker); !ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the watch did not apply the changes")
			}
			time.Sleep(time.Millisecond)
		}
	}
	settle()
	id := fmt.Sprint(a.id)
	tokA := wantSession(t, a.get(t, "/", basic(testEmail, testPassword)), a.id)
	settle()
	reads := st.reads.Load()
	if r := a.get(t, "/", cookies(id, tokA)); r.status != "200 OK" || st.reads.Load() != reads {
		t.Fatalf("own token after its own write was reported: %s, %d reads", r.status, st.reads.Load()-reads)
	}

	a.clock.Advance(time.Second)
	wantSession(t, b.get(t, "/", basic(testEmail, testPassword)), b.id)
	settle()
	if r := a.get(t, "/", cookies(id, tokA)); r.status != "401 Unauthorized" {
		t.Fatalf("the token replaced by the other process: %s", r.status)
	}

	if _, err := b.a.Register(context.Background(), testEmail, "new password"); err != nil {
		t.Fatal(err)
	}
	select {
	case email := <-ended:
		if email != testEmail {
			t.Errorf("ended %q", email)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnEnd not told of the new password")
	}
	if r := a.get(t, "/", basic(testEmail, testPassword)); r.status != "401 Unauthorized" {
		t.Fatalf("the old password after the other process set a new one: %s", r.status)
	}
}
