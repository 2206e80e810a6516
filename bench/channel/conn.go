package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// dialer opens WebSocket connections to the channel door. Every connection
// shares one pool of write buffers, so an idle connection holds only its
// read buffer.
type dialer struct {
	url    string
	header http.Header
	ws     websocket.Dialer
}

// newDialer returns a dialer for rawURL (ws://HOST:PORT/channel) whose
// connections read through a buffer of readBuf bytes. The handshake carries
// an Origin of the same host, which the door accepts by default.
func newDialer(rawURL string, readBuf int) (*dialer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" || u.Host == "" {
		return nil, fmt.Errorf("url %q: want ws://HOST:PORT/PATH", rawURL)
	}
	h := http.Header{}
	h.Set("Origin", "http://"+u.Host)
	return &dialer{
		url:    rawURL,
		header: h,
		ws: websocket.Dialer{
			NetDial:          (&net.Dialer{Timeout: 10 * time.Second}).Dial,
			HandshakeTimeout: 10 * time.Second,
			ReadBufferSize:   readBuf,
			WriteBufferSize:  4096,
			WriteBufferPool:  &sync.Pool{},
		},
	}, nil
}

// dial opens one connection.
func (d *dialer) dial() (*websocket.Conn, error) {
	c, resp, err := d.ws.Dial(d.url, d.header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial: %w (status %s)", err, resp.Status)
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	return c, nil
}

// dialAs opens one connection whose handshake also carries the header
// lines of extra (credentials: Authorization, Cookie) and returns the
// handshake's response, whose Set-Cookie lines a login answers with.
func (d *dialer) dialAs(extra http.Header) (*websocket.Conn, *http.Response, error) {
	h := d.header.Clone()
	for k, vs := range extra {
		h[k] = append([]string(nil), vs...)
	}
	c, resp, err := d.ws.Dial(d.url, h)
	if err != nil {
		if resp != nil {
			return nil, nil, fmt.Errorf("dial: %w (status %s)", err, resp.Status)
		}
		return nil, nil, fmt.Errorf("dial: %w", err)
	}
	return c, resp, nil
}

// readFrame reads the next data message into buf (grown as needed) and
// returns it; the result is valid until the next call with the same buf.
// Pings are answered by the library while it reads.
func readFrame(c *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := c.NextReader()
	if err != nil {
		return buf[:0], err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// message is one client message of the channel (docs/channel.md), for the
// requests that are not on a hot path.
type message struct {
	Method     string          `json:"method"`
	Resource   string          `json:"resource"`
	MsgID      int64           `json:"msg_id"`
	Entity     json.RawMessage `json:"entity,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Persistent bool            `json:"persistent,omitempty"`
	// Rules and Group are those of RULES; a nil Rules is left out.
	Rules *string  `json:"rules,omitempty"`
	Group []string `json:"group,omitempty"`
}

// reply is the part of a server reply the load client reads when it
// unmarshals one.
type reply struct {
	MsgID     *int64          `json:"msg_id"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	SentCount *int64          `json:"sent_count"`
	Entity    json.RawMessage `json:"entity"`
	Effective string          `json:"effective"` // of a RULES reply
}

// call sends m and waits, until the deadline, for the reply with its
// msg_id, skipping the notifications that arrive first; it returns the
// reply, whatever its code.
func call(c *websocket.Conn, m message, deadline time.Time) (reply, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return reply{}, err
	}
	c.SetWriteDeadline(deadline)
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
		return reply{}, err
	}
	c.SetReadDeadline(deadline)
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 512)
	for {
		buf, err = readFrame(c, buf)
		if err != nil {
			return reply{}, fmt.Errorf("%s %s: %w", m.Method, m.Resource, err)
		}
		id, ok := msgID(buf)
		if !ok || id != m.MsgID {
			continue
		}
		var r reply
		if err := json.Unmarshal(buf, &r); err != nil {
			return reply{}, fmt.Errorf("%s %s: reply %q: %w", m.Method, m.Resource, buf, err)
		}
		return r, nil
	}
}

// mustSucceed is call that also wants a success reply.
func mustSucceed(c *websocket.Conn, m message, deadline time.Time) (reply, error) {
	r, err := call(c, m, deadline)
	if err != nil {
		return r, err
	}
	if r.Code != "success" {
		return r, fmt.Errorf("%s %s: %s (%s)", m.Method, m.Resource, r.Code, r.Reason)
	}
	return r, nil
}

var (
	keyMsgID     = []byte(`"msg_id":`)
	keyCode      = []byte(`"code":`)
	keySentCount = []byte(`"sent_count":`)
	valSuccess   = []byte(`"success"`)
	// tsMarker precedes the send time that a publisher puts in the data of
	// its NOTIFYs; the data is a JSON string without escapes, so the marker
	// appears verbatim in the notification.
	tsMarker = []byte(`@ts=`)
)

// intAfter finds key in frame and parses the integer that follows it
// (after optional spaces). It does not unmarshal the frame: the load client
// calls it on every message it receives.
func intAfter(frame, key []byte) (int64, bool) {
	i := bytes.Index(frame, key)
	if i < 0 {
		return 0, false
	}
	return leadingInt(frame[i+len(key):])
}

// leadingInt parses the integer at the start of b, after optional spaces.
func leadingInt(b []byte) (int64, bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	var n int64
	digits := 0
	for ; digits < len(b) && digits < 19 && b[digits] >= '0' && b[digits] <= '9'; digits++ {
		n = n*10 + int64(b[digits]-'0')
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// msgID is the numeric msg_id of a reply; notifications have none.
func msgID(frame []byte) (int64, bool) { return intAfter(frame, keyMsgID) }

// succeeded tells whether a reply's code is "success".
func succeeded(frame []byte) bool {
	i := bytes.Index(frame, keyCode)
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(frame[i+len(keyCode):], " \t\r\n")
	return bytes.HasPrefix(rest, valSuccess)
}

// sentCount is the sent_count of a NOTIFY reply.
func sentCount(frame []byte) (int64, bool) { return intAfter(frame, keySentCount) }

// sendTime is the send time (nanoseconds since the run's clock started)
// that the publisher embedded after tsMarker in a notification's data.
func sendTime(frame []byte) (int64, bool) { return intAfter(frame, tsMarker) }

// appendRequest appends a channel message without marshalling: resource
// and the raw JSON fields are written as they are (the load client only
// uses paths and values that need no escaping).
func appendRequest(b []byte, method, resource string, id int64, rawFields string) []byte {
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","resource":"`...)
	b = append(b, resource...)
	b = append(b, `","msg_id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, rawFields...)
	return append(b, '}')
}

// closeRaw drops a connection without a close frame; with rst the socket
// is reset (SO_LINGER 0) instead of shut down with a FIN.
func closeRaw(c *websocket.Conn, rst bool) error {
	nc := c.NetConn()
	if tc, ok := nc.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	return nc.Close()
}

// closeClean sends a normal close frame and closes the connection.
func closeClean(c *websocket.Conn) {
	c.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.Close()
}

// errStopped is returned by loops that ended because the run was over.
var errStopped = errors.New("stopped")

// login sends a GET with Basic credentials to the HTTP door (the
// channel's URL with http and a slash) and returns its session cookies as
// a Cookie header value, "" if it set none. Any status but 401 will do:
// the door answers 404 for a resource that does not exist, with the
// cookies.
func (d *dialer) login(email, password string) (string, error) {
	u := "http" + strings.TrimPrefix(d.url, "ws") + "/"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(email, password)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", fmt.Errorf("login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", fmt.Errorf("login: GET %s as %s: %s", u, email, resp.Status)
	}
	var uid, token string
	for _, ck := range resp.Cookies() {
		switch ck.Name {
		case "user_id":
			uid = ck.Value
		case "token":
			token = ck.Value
		}
	}
	if uid == "" || token == "" {
		return "", nil
	}
	return "user_id=" + uid + "; token=" + token, nil
}
