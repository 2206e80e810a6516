package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// countingStore counts the calls that reach the store.
type countingStore struct {
	Store
	calls atomic.Int64
}

func (s *countingStore) ByID(ctx context.Context, id int64) (LoginRecord, error) {
	s.calls.Add(1)
	return s.Store.ByID(ctx, id)
}

func (s *countingStore) ByEmail(ctx context.Context, email, realm string) (LoginRecord, error) {
	s.calls.Add(1)
	return s.Store.ByEmail(ctx, email, realm)
}

func (s *countingStore) SetToken(ctx context.Context, id int64, token string) error {
	s.calls.Add(1)
	return s.Store.SetToken(ctx, id, token)
}

func (s *countingStore) ClearToken(ctx context.Context, id int64, token string) (bool, error) {
	s.calls.Add(1)
	return s.Store.ClearToken(ctx, id, token)
}

// benchFixture is an authenticator over an in-memory store with one user;
// counting counts what reaches the store. (Package sqlitestore benchmarks
// the same checks over an SQLite file.)
func benchFixture(tb testing.TB, now func() time.Time) (*Authenticator, *countingStore, int64) {
	tb.Helper()
	st := newMemStore()
	id, err := st.Register(context.Background(), testEmail, "localhost", HashPassword(testEmail, "localhost", testPassword))
	if err != nil {
		tb.Fatal(err)
	}
	counting := &countingStore{Store: st}
	a, err := New(Config{Store: counting, Secret: testSecret, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return a, counting, id
}

// nopWriter is a ResponseWriter that keeps headers and drops the rest.
type nopWriter struct {
	h    http.Header
	code int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(code int)        { w.code = code }

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// TestNoQueryPerRequest proves that a verified cookie session or Basic login
// costs no store call, and that a logout is seen at once.
func TestNoQueryPerRequest(t *testing.T) {
	clk := newClock()
	a, st, id := benchFixture(t, clk.Now)
	h := Required(a)(okHandler)
	serve := func(r *http.Request) int {
		w := &nopWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		return w.code
	}
	login := httptest.NewRequest("GET", "/", nil)
	login.SetBasicAuth(testEmail, testPassword)
	if code := serve(login); code != 200 {
		t.Fatal(code)
	}
	// First login: one read, one token write.
	if n := st.calls.Load(); n != 2 {
		t.Errorf("first login: %d store calls, want 2", n)
	}
	rec, _ := a.cache.id(id)
	session := httptest.NewRequest("GET", "/", nil)
	session.Header.Set("Cookie", fmt.Sprintf("user_id=%d; token=%s", id, rec.Token))
	st.calls.Store(0)
	for range 100 {
		if serve(login) != 200 || serve(session) != 200 {
			t.Fatal("request failed")
		}
	}
	if n := st.calls.Load(); n != 0 {
		t.Errorf("%d store calls for 200 requests in one second, want 0", n)
	}
	// A new second: Basic writes the new token once.
	clk.Advance(time.Second)
	for range 10 {
		serve(login)
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("%d store calls for 10 logins in a new second, want 1", n)
	}
	rec, _ = a.cache.id(id)
	session.Header.Set("Cookie", fmt.Sprintf("user_id=%d; token=%s", id, rec.Token))
	if serve(session) != 200 {
		t.Fatal("session with the new token failed")
	}
	w := &nopWriter{h: http.Header{}}
	if err := a.Logout(w, session); err != nil {
		t.Fatal(err)
	}
	if code := serve(session); code != http.StatusUnauthorized {
		t.Errorf("session after logout: %d", code)
	}
}

// BenchmarkCookieSession measures a verified cookie-session check through
// Required.
func BenchmarkCookieSession(b *testing.B) {
	a, st, id := benchFixture(b, nil)
	h := Required(a)(okHandler)
	login := httptest.NewRequest("GET", "/", nil)
	login.SetBasicAuth(testEmail, testPassword)
	h.ServeHTTP(&nopWriter{h: http.Header{}}, login)
	rec, _ := a.cache.id(id)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", fmt.Sprintf("user_id=%d; token=%s", id, rec.Token))
	w := &nopWriter{h: http.Header{}}
	st.calls.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		w.code = 0
		h.ServeHTTP(w, r)
		if w.code != 200 {
			b.Fatal(w.code)
		}
	}
	b.ReportMetric(float64(st.calls.Load())/float64(b.N), "queries/op")
}

// BenchmarkBasic measures a Basic login through Required: the password
// check, the token (written at most once a second) and the two cookies.
func BenchmarkBasic(b *testing.B) {
	a, st, _ := benchFixture(b, nil)
	h := Required(a)(okHandler)
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(testEmail, testPassword)
	w := &nopWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	st.calls.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, r)
		if w.code != 200 {
			b.Fatal(w.code)
		}
	}
	b.ReportMetric(float64(st.calls.Load())/float64(b.N), "queries/op")
}

// BenchmarkCookieSessionParallel is BenchmarkCookieSession from all CPUs.
func BenchmarkCookieSessionParallel(b *testing.B) {
	a, _, id := benchFixture(b, nil)
	h := Required(a)(okHandler)
	login := httptest.NewRequest("GET", "/", nil)
	login.SetBasicAuth(testEmail, testPassword)
	h.ServeHTTP(&nopWriter{h: http.Header{}}, login)
	rec, _ := a.cache.id(id)
	cookie := fmt.Sprintf("user_id=%d; token=%s", id, rec.Token)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Cookie", cookie)
		w := &nopWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkBasicThrottled is BenchmarkBasic while the throttle tracks
// failures of 10,000 other client addresses (an attack in progress), and
// with throttling off for comparison.
func BenchmarkBasicThrottled(b *testing.B) {
	for _, tt := range []struct {
		name string
		off  bool
	}{{"busy", false}, {"off", true}} {
		b.Run(tt.name, func(b *testing.B) {
			a, _, _ := benchFixture(b, nil)
			a.throttle = newThrottle(Throttle{Off: tt.off})
			h := Required(a)(okHandler)
			wrong := httptest.NewRequest("GET", "/", nil)
			wrong.SetBasicAuth(testEmail, "wrong")
			for i := range 10000 {
				wrong.RemoteAddr = fmt.Sprintf("10.%d.%d.1:1", i/256, i%256)
				h.ServeHTTP(&nopWriter{h: http.Header{}}, wrong)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.SetBasicAuth(testEmail, testPassword)
			w := &nopWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, r)
				if w.code != 200 {
					b.Fatal(w.code)
				}
			}
		})
	}
}
