package auth_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
)

func ExampleRequired() {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	secret, err := auth.LoadSecret("") // random, for this process only
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{Store: store, Secret: secret})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := a.Register(ctx, "user@example.com", "secret"); err != nil {
		log.Fatal(err)
	}

	private := auth.Required(a)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", core.IdentityFromContext(r.Context()).Email)
	}))
	srv := httptest.NewUnstartedServer(private)
	srv.Listener = core.Listen(srv.Listener) // exact reason phrases
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	defer srv.Close()

	get := func(user, password string) {
		req, _ := http.NewRequest("GET", srv.URL+"/private", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s | %s | %q\n", resp.Status, resp.Header.Get("WWW-Authenticate"), body)
	}
	get("", "")
	get("nobody@example.com", "secret")
	get("user@example.com", "wrong")
	get("user@example.com", "secret")
	// Output:
	// 401 Unauthorized | Basic realm="localhost" | "401 Unauthorized\n"
	// 401 Not Found | Basic realm="localhost" | "401 Not Found\n"
	// 401 Unauthorized | Basic realm="localhost" | "401 Unauthorized\n"
	// 200 OK |  | "hello user@example.com"
}

// Optional serves anonymous callers and known ones alike; the caller is in
// the request's context, and in core.Request.Identity for a core.Handler,
// wherever it is mounted.
func ExampleOptional() {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	secret, err := auth.LoadSecret("")
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{Store: store, Secret: secret})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := a.Register(ctx, "user@example.com", "secret"); err != nil {
		log.Fatal(err)
	}

	hello := core.HTTP(core.HandlerFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		who := "anonymous"
		if req.Identity != nil {
			who = req.Identity.Email
		}
		return &core.Response{Body: []byte("hello " + who + " at " + req.Path)}, nil
	}))
	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Optional(a)(http.StripPrefix("/api", hello)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(user, password string) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/hello", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %q\n", resp.StatusCode, body)
	}
	get("", "")
	get("user@example.com", "secret")
	get("user@example.com", "wrong")
	// Output:
	// 200 "hello anonymous at /hello"
	// 200 "hello user@example.com at /hello"
	// 401 "401 Unauthorized\n"
}

// Cookies gives the session cookies names of their own and a path, for an
// authenticator mounted under a prefix of a larger application.
func ExampleCookies() {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	secret, err := auth.LoadSecret("")
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{
		Store:   store,
		Secret:  secret,
		Cookies: auth.Cookies{Token: "rt_token", UserID: "rt_uid", Path: "/rt/"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := a.Register(ctx, "user@example.com", "secret"); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(auth.Required(a)(http.NotFoundHandler()))
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/rt/x", nil)
	req.SetBasicAuth("user@example.com", "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		fmt.Printf("%s: Path=%s HttpOnly=%v\n", c.Name, c.Path, c.HttpOnly)
	}
	// Output:
	// rt_token: Path=/rt/ HttpOnly=true
	// rt_uid: Path=/rt/ HttpOnly=true
}
