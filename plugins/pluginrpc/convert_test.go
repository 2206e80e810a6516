package pluginrpc

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
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
			m := roundTrip(t, &pluginv2.Response{Cookies: encodeCookies([]*http.Cookie{c.c})}, &pluginv2.Response{})
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := roundTrip(t, &pluginv2.HandleResponse{Error: encodeError(c.err)}, &pluginv2.HandleResponse{})
			got := decodeError(m.GetError())
			if got.Error() != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			_, wantStatus := core.AsStatus(c.err)
			if _, isStatus := core.AsStatus(got); isStatus != wantStatus {
				t.Errorf("status error: %v, want %v", isStatus, wantStatus)
			}
		})
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
