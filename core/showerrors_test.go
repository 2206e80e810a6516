package core

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestShowErrorsOnAConnection checks the mark ShowErrors keeps on a
// connection of a Listen listener: it holds for the request that passed
// through ShowErrors only, not for the next request on the same
// connection, which does not.
func TestShowErrorsOnAConnection(t *testing.T) {
	fail := HandlerFunc(func(_ context.Context, _ *Request) (*Response, error) { return nil, errors.New("disk on fire") })
	mux := http.NewServeMux()
	mux.Handle("/shown", ShowErrors(HTTP(fail)))
	mux.Handle("/hidden", HTTP(fail))
	srv := newWireServer(t, mux)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, want := range []struct{ path, body string }{
		{"/shown", "disk on fire"},
		{"/hidden", "500 Internal Server Error\n"},
		{"/shown", "disk on fire"},
	} {
		io.WriteString(c, "GET "+want.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || !strings.HasPrefix(string(b), want.body) {
			t.Errorf("GET %s: %d %q, want 500 %q", want.path, resp.StatusCode, b, want.body)
		}
	}
}
