package middleware

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/core"
)

func TestRecover(t *testing.T) {
	panics := func(http.ResponseWriter, *http.Request) { panic("kaboom") }
	cases := []struct {
		name    string
		mw      func(http.Handler) http.Handler
		handler http.HandlerFunc
		code    int
		body    string
	}{
		{"panic, no trace by default", Recover, panics, 500, "500 Internal Server Error\n"},
		{"panic with trace under ShowErrors", recoverShowing, panics, 500, "panic: kaboom\n\ngoroutine"},
		{"no panic", Recover, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fine") }, 200, "fine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.mw(c.handler))
			defer srv.Close()
			for i := 0; i < 2; i++ { // the server keeps serving
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.code || !strings.HasPrefix(string(b), c.body) {
					t.Errorf("%d %.60q", resp.StatusCode, b)
				}
				if c.code == 500 && !strings.Contains(c.body, "kaboom") && strings.Contains(string(b), "kaboom") {
					t.Errorf("the panic value leaked: %q", b)
				}
			}
		})
	}
}

// TestRecoverAfterHeader: a panic after WriteHeader and a flush (found by
// type assertion, which the wrapper must keep) aborts the connection.
func TestRecoverAfterHeader(t *testing.T) {
	srv := httptest.NewServer(Recover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("Recover's writer is not an http.Flusher")
			return
		}
		f.Flush()
		panic("late")
	})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a late panic gave a complete answer")
	}
}

func TestCookies(t *testing.T) {
	h := Cookies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "same", Value: "1", Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "changed", Value: "new", Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "added", Value: "x", Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "gone", Value: "", Path: "/", MaxAge: -1})
		io.WriteString(w, "ok")
	}))
	cases := []struct {
		name, cookie string
		want         []string
	}{
		{"with cookies", "same=1; changed=old; gone=2", []string{"changed=new; Path=/", "added=x; Path=/", "gone=; Path=/; Max-Age=0"}},
		{"without cookies", "", []string{"same=1; Path=/", "changed=new; Path=/", "added=x; Path=/", "gone=; Path=/; Max-Age=0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/", nil)
			if c.cookie != "" {
				r.Header.Set("Cookie", c.cookie)
			}
			h.ServeHTTP(w, r)
			got := w.Header().Values("Set-Cookie")
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	h := alice.New(Log(logger), Recover).ThenFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("x")
		}
		core.WriteError(w, r, core.Status(400, "Invalid Path"))
	})
	for _, p := range []string{"/a", "/boom"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	out := buf.String()
	for _, want := range []string{"path=/a status=400 bytes=17", "path=/boom status=500"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}

// recoverShowing is Recover behind core.ShowErrors, as reso's server has it:
// a panic's trace goes into the 500 body.
func recoverShowing(next http.Handler) http.Handler { return core.ShowErrors(Recover(next)) }
