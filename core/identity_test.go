package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestIdentityAgrees checks that Request.Identity agrees with the
// request's context wherever the identity is set: by middleware in front
// of HTTP (no router), in front of a router, and inside a route.
func TestIdentityAgrees(t *testing.T) {
	ann := &Identity{ID: 7, Email: "ann@example.com"}
	as := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(NewIdentityContext(r.Context(), ann)))
		})
	}
	var seen *Identity
	h := HTTP(HandlerFunc(func(_ context.Context, req *Request) (*Response, error) {
		seen = req.Identity
		return nil, nil
	}))
	inner, err := NewRouter([]Route{{Match: "GET /", Handler: h}})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := NewRouter([]Route{{Match: "GET /", Handler: as(h)}})
	if err != nil {
		t.Fatal(err)
	}
	for name, handler := range map[string]http.Handler{
		"before HTTP":        as(h),
		"stripped":           as(http.StripPrefix("/p", h)),
		"before a router":    as(inner),
		"inside a route":     outer,
		"anonymous":          h,
		"anonymous (router)": inner,
	} {
		seen = nil
		target := "/x"
		if name == "stripped" {
			target = "/p/x"
		}
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
		want := ann
		if name == "anonymous" || name == "anonymous (router)" {
			want = nil
		}
		if seen != want {
			t.Errorf("%s: identity %+v, want %+v", name, seen, want)
		}
	}
}
