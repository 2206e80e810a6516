package sqlitestore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/reso-project/reso/middleware/auth"
)

// BenchmarkBasic measures a Basic login through auth.Required over an
// SQLite file: the password check and the token, written at most once a
// second with the real clock.
func BenchmarkBasic(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(b.TempDir(), "reso.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	a, err := auth.New(auth.Config{Store: st, Secret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Register(ctx, testEmail, testPassword); err != nil {
		b.Fatal(err)
	}
	h := auth.Required(a)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(testEmail, testPassword)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
