package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxHTTPAnswer bounds the body of an answer to Send or Cancel.
const maxHTTPAnswer = 1 << 20

// Send delivers body (an invitation {"command", "url", "id", "reason"}) to
// a call-control resource such as "/login/bob@example.org" with the HTTP
// method SEND (docs/call.md), with Options.Header (and HeaderFunc) as
// credentials, to the origin of the URL of the last connection. It
// returns the message's id and the status: 200 delivered, 202 waiting. A
// refusal is an *Error with the status and the reason phrase
// ("Not Logged In").
func (c *Client) Send(ctx context.Context, resource string, body any) (id string, status int, err error) {
	b, err := json.Marshal(body)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	out, status, err := c.http(ctx, "SEND", resource, b)
	if err != nil {
		return "", status, err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return "", status, fmt.Errorf("client: SEND answer: %w", err)
	}
	return m.ID, status, nil
}

// Cancel withdraws a waiting message, e.g. "/login/bob@example.org/<id>",
// with the HTTP method CANCEL.
func (c *Client) Cancel(ctx context.Context, resource string) error {
	_, _, err := c.http(ctx, "CANCEL", resource, nil)
	return err
}

// http sends a request to the server's HTTP side (the origin of the
// channel's URL).
func (c *Client) http(ctx context.Context, method, resource string, body []byte) ([]byte, int, error) {
	c.mu.Lock()
	base := c.url
	c.mu.Unlock()
	u, err := url.Parse(base)
	if err != nil {
		return nil, 0, fmt.Errorf("client: %w", err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	target := u.Scheme + "://" + u.Host + (&url.URL{Path: resource}).EscapedPath()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("client: %w", err)
	}
	h, err := c.header(ctx)
	if err != nil {
		return nil, 0, err
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.opt.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPAnswer))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("client: %w", err)
	}
	if resp.StatusCode >= 300 {
		return nil, resp.StatusCode, refusal(resp.StatusCode, out)
	}
	return out, resp.StatusCode, nil
}

// refusal is the *Error of an HTTP answer with that status and body.
func refusal(status int, body []byte) *Error {
	// reso repeats the status line as the body: "404 Not Logged In".
	reason, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if code, rest, ok := strings.Cut(reason, " "); ok && code == strconv.Itoa(status) {
		reason = rest
	} else {
		reason = http.StatusText(status)
	}
	return &Error{Reason: reason, Status: status}
}
