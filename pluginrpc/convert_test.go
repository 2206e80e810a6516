package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// roundTrip marshals m and unmarshals it again, as the wire does.
func roundTrip[M proto.Message](t *testing.T, m M, into M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
	return into
}

func TestCookieRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		c    *http.Cookie
	}{
		{"plain", &http.Cookie{Name: "a", Value: "b"}},
		{"all fields", &http.Cookie{Name: "full", Value: "v 2", Quoted: true, Path: "/p", Domain: "example.org",
			Expires: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC), RawExpires: "raw", MaxAge: -1, Secure: true, HttpOnly: true,
			SameSite: http.SameSiteNoneMode, Partitioned: true, Raw: "full=v 2", Unparsed: []string{"x=y"}}},
		{"far future", &http.Cookie{Name: "f", Value: "v", Expires: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := roundTrip(t, &pluginv3.Response{Cookies: encodeCookies([]*http.Cookie{c.c})}, &pluginv3.Response{})
			got := decodeCookies(m.GetCookies())[0]
			if got.String() != c.c.String() {
				t.Errorf("Set-Cookie %q, want %q", got.String(), c.c.String())
			}
			if !got.Expires.Equal(c.c.Expires) || got.Expires.IsZero() != c.c.Expires.IsZero() {
				t.Errorf("Expires %v, want %v", got.Expires, c.c.Expires)
			}
			got.Expires, c.c.Expires = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, c.c) {
				t.Errorf("got %#v\nwant %#v", got, c.c)
			}
		})
	}
}

func TestErrorRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string // the status line the host writes, or the 500 body
	}{
		{"status", core.Status(400, "Invalid Path"), "400 Invalid Path"},
		{"wrapped status", fmt.Errorf("files: %w", core.ErrObjectNotFound), "404 Object Not Found"},
		{"plain", errors.New("config: disk on fire"), "config: disk on fire"},
		{"not utf-8", errors.New("files: open caf\xe9.txt: \xff"), "files: open caf\xe9.txt: \xff"},
		{"status not utf-8", core.Status(400, "Bad \xff"), "400 Bad Request"},
		{"sentinel", core.ErrNotFound, "404 Not Found"},
		{"canceled", context.Canceled, "context canceled"},
		{"wrapped canceled", fmt.Errorf("files: %w", context.Canceled), "files: context canceled"},
		{"deadline", fmt.Errorf("users: %w", context.DeadlineExceeded), "users: context deadline exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := roundTrip(t, &pluginv3.HandleResponse{Error: encodeError(c.err)}, &pluginv3.HandleResponse{})
			got := decodeError(m.GetError())
			if got.Error() != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			for _, sentinel := range []error{context.Canceled, context.DeadlineExceeded, core.ErrNotFound, core.ErrObjectNotFound} {
				if errors.Is(got, sentinel) != errors.Is(c.err, sentinel) {
					t.Errorf("errors.Is(%v) = %v, want %v", sentinel, errors.Is(got, sentinel), errors.Is(c.err, sentinel))
				}
			}
			if c.err == context.Canceled && got != context.Canceled {
				t.Errorf("got %#v, want context.Canceled itself", got)
			}
			_, wantStatus := core.AsStatus(c.err)
			if _, isStatus := core.AsStatus(got); isStatus != wantStatus {
				t.Errorf("status error: %v, want %v", isStatus, wantStatus)
			}
		})
	}
}

// TestStatusErrorIsAcrossBoundary checks that a status error that crossed
// the boundary is the same error: errors.Is finds the sentinel it was, and
// only that one.
func TestStatusErrorIsAcrossBoundary(t *testing.T) {
	sentinels := []core.StatusError{core.ErrNotFound, core.ErrObjectNotFound, core.ErrInvalidScope, core.ErrMethodNotAllowed}
	for _, sent := range sentinels {
		t.Run(sent.Error(), func(t *testing.T) {
			m := roundTrip(t, &pluginv3.HandleResponse{Error: encodeError(fmt.Errorf("bound: %w", sent))}, &pluginv3.HandleResponse{})
			got := decodeError(m.GetError())
			for _, other := range sentinels {
				if errors.Is(got, other) != (other == sent) {
					t.Errorf("errors.Is(%v, %v) = %v", got, other, errors.Is(got, other))
				}
			}
		})
	}
	// A code no status line can carry is not passed on to net/http.
	if got := decodeError(&pluginv3.Error{Code: 7, Reason: []byte("Odd")}); !errors.Is(got, core.ErrInternal) {
		t.Errorf("code 7: %v, want %v", got, core.ErrInternal)
	}
}

func TestBodyErrorRoundTrip(t *testing.T) {
	tooLarge := decodeBodyError(encodeBodyError(fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 10})))
	if _, err := core.ReadBody(errReader{tooLarge}); err != core.ErrBodyTooLarge {
		t.Errorf("too large: ReadBody = %v, want %v", err, core.ErrBodyTooLarge)
	}
	other := decodeBodyError(encodeBodyError(errors.New("unexpected EOF")))
	if _, err := core.ReadBody(errReader{other}); err == nil || err == core.ErrBodyTooLarge {
		t.Errorf("other: ReadBody = %v, want 400 Error Reading Body", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestTimeRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Unix(1700000000, 123456789), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)} {
		if got := decodeTime(encodeTime(tm)); !got.Equal(tm) || got.IsZero() != tm.IsZero() {
			t.Errorf("%v: got %v", tm, got)
		}
	}
}

// notUTF8 is text that is not UTF-8, as Go strings may hold it.
const notUTF8 = "caf\xe9 \xff\xfe"

// TestNotUTF8RoundTrip checks that text that is not UTF-8 crosses every
// field of the protocol intact, in both directions (a string field of
// protocol version 1 refused to marshal it).
func TestNotUTF8RoundTrip(t *testing.T) {
	t.Run("route", func(t *testing.T) {
		r := plugins.Route{Match: "GET /" + notUTF8, Rewrite: "GET /x" + notUTF8, Assign: []string{"A=" + notUTF8}, Identity: plugins.IdentityRequired}
		got := decodeRoute(roundTrip(t, encodeRoute(r), &pluginv3.Route{}))
		if !reflect.DeepEqual(got, r) {
			t.Errorf("got %#v\nwant %#v", got, r)
		}
	})
	t.Run("request", func(t *testing.T) {
		req := &core.Request{
			Method: "GET" + notUTF8, Path: "/" + notUTF8, Consumed: "/c" + notUTF8, Query: "q=" + notUTF8,
			Vars:          map[string]string{notUTF8: notUTF8, "ACCEPT": "text/plain"},
			Header:        http.Header{"User-Agent": {notUTF8, ""}, notUTF8: {"x"}},
			ContentLength: -2,
			Identity:      &core.Identity{ID: 7, Email: notUTF8 + "@example.org"},
		}
		got := decodeRequestFields(roundTrip(t, encodeRequest(req), &pluginv3.Request{}))
		if !reflect.DeepEqual(got, req) {
			t.Errorf("got %#v\nwant %#v", got, req)
		}
	})
	t.Run("response", func(t *testing.T) {
		resp := &core.Response{
			Code: 201, Reason: "Made " + notUTF8, ContentType: "text/" + notUTF8,
			Header:  http.Header{"X-Name": {notUTF8}},
			Cookies: []*http.Cookie{{Name: "n", Value: notUTF8, Path: "/" + notUTF8, Domain: notUTF8, RawExpires: notUTF8, Raw: notUTF8, Unparsed: []string{notUTF8}}},
			Body:    []byte(notUTF8),
		}
		got := decodeResponseFields(roundTrip(t, encodeResponse(resp), &pluginv3.Response{}))
		if !reflect.DeepEqual(got, resp) {
			t.Errorf("got %#v\nwant %#v", got, resp)
		}
	})
	t.Run("body error", func(t *testing.T) {
		got := decodeBodyError(roundTrip(t, encodeBodyError(errors.New(notUTF8)), &pluginv3.BodyError{}))
		if got.Error() != notUTF8 {
			t.Errorf("got %q", got)
		}
	})
	t.Run("settings", func(t *testing.T) {
		// The host's side of the Host service, with the messages marshaled
		// as the wire does.
		hs := &hostServer{host: plugins.Services{Settings: pluginhost.NewSettings(nil)}}
		set := roundTrip(t, &pluginv3.SetSettingRequest{Name: wire(notUTF8), Value: wire("/dir/" + notUTF8)}, &pluginv3.SetSettingRequest{})
		sresp, err := hs.SetSetting(t.Context(), set)
		if err != nil || sresp.GetError() != nil {
			t.Fatalf("SetSetting: %v %v", err, sresp.GetError())
		}
		get := roundTrip(t, &pluginv3.SettingRequest{Name: wire(notUTF8)}, &pluginv3.SettingRequest{})
		resp, err := hs.Setting(t.Context(), get)
		if err != nil {
			t.Fatal(err)
		}
		resp = roundTrip(t, resp, &pluginv3.SettingResponse{})
		if v := string(resp.GetValue()); v != "/dir/"+notUTF8 {
			t.Errorf("setting %q, want %q", v, "/dir/"+notUTF8)
		}
	})
	t.Run("setting error", func(t *testing.T) {
		hs := &hostServer{host: plugins.Services{Settings: failingHost{errors.New("settings: " + notUTF8)}}}
		resp, err := hs.Setting(t.Context(), &pluginv3.SettingRequest{Name: wire("directory")})
		if err != nil {
			t.Fatal(err)
		}
		resp = roundTrip(t, resp, &pluginv3.SettingResponse{})
		if got := decodeError(resp.GetError()); got.Error() != "settings: "+notUTF8 {
			t.Errorf("error %q", got)
		}
	})
}

// failingHost is settings whose every call fails with err.
type failingHost struct{ err error }

func (h failingHost) Setting(context.Context, string) (string, error)  { return "", h.err }
func (h failingHost) SetSetting(context.Context, string, string) error { return h.err }

var _ plugins.Settings = failingHost{}

// TestIdentityModeRoundTrip checks that every identity mode crosses the
// protocol, that the older auth flag still marks required routes both
// ways, and that an unknown mode is not read as none.
func TestIdentityModeRoundTrip(t *testing.T) {
	for _, mode := range []plugins.IdentityMode{plugins.IdentityNone, plugins.IdentityOptional, plugins.IdentityRequired} {
		enc := encodeRoute(plugins.Route{Match: "GET /", Identity: mode})
		if enc.GetAuth() != (mode == plugins.IdentityRequired) {
			t.Errorf("%s: auth flag %v", mode, enc.GetAuth())
		}
		if got := decodeRoute(roundTrip(t, enc, &pluginv3.Route{})).Identity; got != mode {
			t.Errorf("%s: decoded %s", mode, got)
		}
	}
	if got := decodeRoute(&pluginv3.Route{Auth: true}).Identity; got != plugins.IdentityRequired {
		t.Errorf("an older peer's auth flag: %s, want required", got)
	}
	if got := decodeRoute(&pluginv3.Route{Identity: 9}).Identity; got == plugins.IdentityNone || got == plugins.IdentityOptional {
		t.Errorf("an unknown mode decoded as %s", got)
	}
}
