package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentSessions hammers one user with logins, logouts and cookie
// checks at once (run with -race); afterwards memory and the store agree.
func TestConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	clk := newClock()
	a, err := New(Config{Store: st, Secret: testSecret, Now: clk.Now, MaxCached: 4})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{a: a, store: st, clock: clk}
	f.srv = newServer(t, f.handler())
	var ids []int64
	for i := range 8 {
		id, err := a.Register(ctx, fmt.Sprintf("u%d@example.com", i), "pw")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				u := (g + i) % len(ids)
				email := fmt.Sprintf("u%d@example.com", u)
				switch i % 4 {
				case 0:
					clk.Advance(time.Second)
					f.get(t, "/", basic(email, "pw"))
				case 1:
					tok, _ := st.ByID(ctx, ids[u])
					f.get(t, "/", cookies(fmt.Sprint(ids[u]), tok.Token))
				case 2:
					tok, _ := st.ByID(ctx, ids[u])
					f.get(t, "/logout", cookies(fmt.Sprint(ids[u]), tok.Token))
				case 3:
					if _, err := a.Register(ctx, email, "pw"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		db, _ := st.ByID(ctx, id)
		if mem, ok := a.cache.id(id); ok && mem != db {
			t.Errorf("memory %+v, database %+v", mem, db)
		}
	}
	if len(a.cache.byID) > 4 || len(a.cache.byEmail) > 4 {
		t.Errorf("cache holds %d records, %d e-mails; want at most 4", len(a.cache.byID), len(a.cache.byEmail))
	}
}
