// Command call plays a two-party call against a running reso, with the
// bundled plugin call (docs/call.md), and checks every answer against that
// contract: status line, Location and body. It prints each step and exits
// with status 1 at the first answer the contract does not allow.
//
// Register the two users once, start reso, then run it (the defaults are
// those of the walk-through in docs/call.md, "A call with curl"):
//
//	echo pw | go run ./cmd/reso user add alice@example.com
//	echo pw | go run ./cmd/reso user add bob@example.com
//	go run ./cmd/reso &
//	go run ./examples/call                     # -addr localhost:8000 -alice alice@example.com:pw -bob bob@example.com:pw
//
// The scenario: alice and bob log in (POST /login/<email> with a contact
// each); alice creates a call (POST /call) and sends bob an invitation
// while he is not watching (202 Accepted, it waits), then withdraws it
// (CANCEL, 200 OK, then 404 Not Found); bob opens the GET kept open
// GET /login/<bob>?watch=diff (newline-delimited JSON) and waits; alice
// joins the call (POST /call/<id>) and SENDs {"command":"invite",
// "url":"/call/<id>","id":...} to bob; bob's stream shows it as a NOTIFY
// from alice (and not the withdrawn one); a CANCEL of it now answers
// 409 Already Delivered; bob joins; GET /call/<id> lists alice then bob;
// both leave (DELETE /call/<id>/<participant>), alice ends the call
// (DELETE /call/<id>, after which GET answers 404 Not Found), and both log
// out (DELETE /login/<email>/<id>).
//
// It uses the standard library only, and Basic credentials on every
// request.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "localhost:8000", "reso's address, HOST:PORT")
	alice := flag.String("alice", "alice@example.com:pw", "the caller's credentials, EMAIL:PASSWORD")
	bob := flag.String("bob", "bob@example.com:pw", "the callee's credentials, EMAIL:PASSWORD")
	wait := flag.Duration("wait", 5*time.Second, "longest wait for an answer or a line of the stream")
	flag.Parse()
	a, err := parseUser(*alice)
	if err == nil {
		var b user
		b, err = parseUser(*bob)
		if err == nil {
			err = run(os.Stdout, "http://"+*addr, a, b, *wait)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "call: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("call: every answer is what docs/call.md says")
}

// user is one party: its credentials.
type user struct {
	email, password string
}

// parseUser splits EMAIL:PASSWORD at the first colon.
func parseUser(s string) (user, error) {
	email, pw, ok := strings.Cut(s, ":")
	if !ok || email == "" {
		return user{}, fmt.Errorf("%q: want EMAIL:PASSWORD", s)
	}
	return user{email, pw}, nil
}

// client sends the requests of the scenario and checks their answers.
type client struct {
	out  io.Writer
	base string
	http *http.Client
}

// answer is a response read whole.
type answer struct {
	status   string // "201 Created"
	location string
	body     []byte
}

// do sends method path as u with body (JSON, or nothing when nil) and reads
// the whole answer.
func (c *client) do(u user, method, path string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.SetBasicAuth(u.email, u.password)
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return answer{resp.Status, resp.Header.Get("Location"), b}, nil
}

// expect sends the request, prints the step and its answer, and checks the
// status line. With out non-nil the body must be a JSON object, decoded
// into out.
func (c *client) expect(step string, u user, method, path string, body any, status string, out any) (answer, error) {
	a, err := c.do(u, method, path, body)
	if err != nil {
		return a, fmt.Errorf("%s: %w", step, err)
	}
	fmt.Fprintf(c.out, "%-46s %s %s -> %s %s\n", step, method, path, a.status, short(a.body))
	if a.status != status {
		return a, fmt.Errorf("%s: %s %s answered %q, docs/call.md says %q", step, method, path, a.status, status)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			return a, fmt.Errorf("%s: %s %s: the body %q is not the JSON object docs/call.md says: %v", step, method, path, a.body, err)
		}
	}
	return a, nil
}

// created is the body of a 201 Created: {"id", "url"} (and "expires" for a
// contact).
type created struct {
	ID      string `json:"id"`
	URL     string `json:"url"`
	Expires *int   `json:"expires"`
}

// expectCreated checks a 201 Created: an id, a url under prefix ending in
// that id, and a Location naming that url.
func (c *client) expectCreated(step string, u user, path string, body any, prefix string) (created, error) {
	var cr created
	a, err := c.expect(step, u, "POST", path, body, "201 Created", &cr)
	if err != nil {
		return cr, err
	}
	switch {
	case cr.ID == "" || cr.URL != prefix+cr.ID:
		return cr, fmt.Errorf("%s: body %s: want {\"id\": <id>, \"url\": %q+<id>}", step, a.body, prefix)
	case a.location == "" || !strings.HasSuffix(a.location, cr.URL):
		return cr, fmt.Errorf("%s: Location %q, want the new resource's url %q", step, a.location, cr.URL)
	}
	return cr, nil
}

// expectEmpty checks an answer whose body is {}.
func (c *client) expectEmpty(step string, u user, method, path string, status string) error {
	var m map[string]any
	a, err := c.expect(step, u, method, path, nil, status, &m)
	if err != nil {
		return err
	}
	if len(m) != 0 {
		return fmt.Errorf("%s: body %s, want {}", step, a.body)
	}
	return nil
}

// expectMessage checks a SEND's answer: status and {"id": <message id>}.
func (c *client) expectMessage(step string, u user, path string, body any, status string) (string, error) {
	var m struct {
		ID string `json:"id"`
	}
	a, err := c.expect(step, u, "SEND", path, body, status, &m)
	if err == nil && m.ID == "" {
		err = fmt.Errorf("%s: body %s, want {\"id\": <message id>}", step, a.body)
	}
	return m.ID, err
}

// stream is a GET kept open, read line by line.
type stream struct {
	lines  chan []byte
	cancel context.CancelFunc
	done   chan struct{}
}

// open starts GET path as u and returns its lines (newline-delimited JSON).
func (c *client) open(step string, u user, path string) (*stream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.SetBasicAuth(u.email, u.password)
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: GET %s: %w", step, path, err)
	}
	fmt.Fprintf(c.out, "%-46s GET %s -> %s (kept open)\n", step, path, resp.Status)
	if resp.Status != "200 OK" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%s: GET %s answered %q %s, want 200 OK and a stream", step, path, resp.Status, b)
	}
	s := &stream{lines: make(chan []byte, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			s.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	return s, nil
}

// next returns the stream's next line, or an error after wait.
func (s *stream) next(wait time.Duration) ([]byte, error) {
	select {
	case l, ok := <-s.lines:
		if !ok {
			return nil, errors.New("the stream ended")
		}
		return l, nil
	case <-time.After(wait):
		return nil, fmt.Errorf("nothing on the stream for %s", wait)
	}
}

// close ends the GET kept open.
func (s *stream) close() {
	s.cancel()
	<-s.done
}

// notification is one line of a GET kept open with watch=diff: the state
// first ({"resource", "type", "entity"}), then notifications.
type notification struct {
	Notify   string          `json:"notify"`
	Resource string          `json:"resource"`
	Entity   json.RawMessage `json:"entity"`
	Data     json.RawMessage `json:"data"`
	From     *string         `json:"from"`
	Seq      int64           `json:"seq"`
}

// invitation is the body of a SEND.
type invitation struct {
	Command string `json:"command"`
	URL     string `json:"url"`
	ID      string `json:"id"`
}

// run plays the scenario at base (http://HOST:PORT) with caller a and
// callee b.
func run(out io.Writer, base string, a, b user, wait time.Duration) error {
	c := &client{out: out, base: base, http: &http.Client{Timeout: wait}}
	// The stream's client has no overall time limit: its body stays open.
	sc := &client{out: out, base: base, http: &http.Client{}}
	aLogin, bLogin := "/login/"+url.PathEscape(a.email), "/login/"+url.PathEscape(b.email)
	wantA, wantB := "/login/"+a.email+"/", "/login/"+b.email+"/"

	// 1. Both log in: a contact each, 3,600 s by default.
	ac, err := c.expectCreated("alice logs in", a, aLogin, map[string]any{"contact": "sip:alice@192.0.2.1:5060"}, wantA)
	if err != nil {
		return err
	}
	bc, err := c.expectCreated("bob logs in", b, bLogin, map[string]any{"contact": "sip:bob@192.0.2.2:5060"}, wantB)
	if err != nil {
		return err
	}
	for _, cr := range []created{ac, bc} {
		if cr.Expires == nil || *cr.Expires != 3600 {
			return fmt.Errorf("login %s: expires %v, docs/call.md says 3600 without \"expires\"", cr.URL, cr.Expires)
		}
	}
	var contacts []map[string]any
	if _, err := c.expect("bob lists his contacts", b, "GET", bLogin, nil, "200 OK", &contacts); err != nil {
		return err
	}
	if len(contacts) != 1 || contacts[0]["id"] != bc.ID || contacts[0]["contact"] != "sip:bob@192.0.2.2:5060" {
		return fmt.Errorf("bob's contacts %v: want [{\"id\": %q, \"contact\": \"sip:bob@192.0.2.2:5060\", \"expires\": 3600}]", contacts, bc.ID)
	}

	// 2. alice creates a call.
	call, err := c.expectCreated("alice creates a call", a, "/call", map[string]any{"subject": "planning"}, "/call/")
	if err != nil {
		return err
	}

	// 3. An invitation while bob follows nothing waits; alice withdraws it.
	early := invitation{"invite", call.URL, "inv-0"}
	m0, err := c.expectMessage("alice invites bob (not watching)", a, bLogin, early, "202 Accepted")
	if err != nil {
		return err
	}
	if err := c.expectEmpty("alice withdraws the waiting invitation", a, "CANCEL", bLogin+"/"+url.PathEscape(m0), "200 OK"); err != nil {
		return err
	}
	if _, err := c.expect("alice withdraws it again", a, "CANCEL", bLogin+"/"+url.PathEscape(m0), nil, "404 Not Found", nil); err != nil {
		return err
	}

	// 4. bob waits for invitations on a GET kept open.
	st, err := sc.open("bob waits for invitations", b, bLogin+"?watch=diff")
	if err != nil {
		return err
	}
	defer st.close()
	line, err := st.next(wait)
	if err != nil {
		return fmt.Errorf("bob's stream: the state: %w", err)
	}
	fmt.Fprintf(out, "%-46s %s\n", "  bob's stream: the state", line)
	var state notification
	if err := json.Unmarshal(line, &state); err != nil || state.Notify != "" || state.Resource != "/login/"+b.email {
		return fmt.Errorf("bob's stream: first line %s: want the state {\"resource\": %q, \"type\", \"entity\"}", line, "/login/"+b.email)
	}
	var ent map[string]any
	if err := json.Unmarshal(state.Entity, &ent); err != nil || ent["email"] != b.email {
		return fmt.Errorf("bob's stream: the state's entity %s: want {\"email\": %q}", state.Entity, b.email)
	}

	// 5. alice joins and invites bob, who is watching now.
	ap, err := c.expectCreated("alice joins", a, call.URL, map[string]any{"session": "sip:alice@192.0.2.1:5060"}, call.URL+"/")
	if err != nil {
		return err
	}
	inv := invitation{"invite", call.URL, "inv-1"}
	m1, err := c.expectMessage("alice invites bob", a, bLogin, inv, "200 OK")
	if err != nil {
		return err
	}

	// 6. bob's stream shows it (other lines, such as UPDATEs of his
	// contacts, are skipped; the withdrawn invitation must not come).
	deadline := time.Now().Add(wait)
	for {
		line, err := st.next(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("bob's stream: waiting for the invitation: %w", err)
		}
		var n notification
		if err := json.Unmarshal(line, &n); err != nil {
			return fmt.Errorf("bob's stream: %q is not JSON: %v", line, err)
		}
		if n.Notify != "NOTIFY" {
			fmt.Fprintf(out, "%-46s %s\n", "  bob's stream (skipped)", line)
			continue
		}
		fmt.Fprintf(out, "%-46s %s\n", "  bob's stream: the invitation", line)
		var got invitation
		if err := json.Unmarshal(n.Data, &got); err != nil || got != inv {
			return fmt.Errorf("bob's stream: data %s, want what alice sent: %+v", n.Data, inv)
		}
		if n.Resource != "/login/"+b.email || n.From == nil || *n.From != a.email || n.Seq <= 0 {
			return fmt.Errorf("bob's stream: %s: want resource %q, from %q and a seq", line, "/login/"+b.email, a.email)
		}
		break
	}
	if _, err := c.expect("alice tries to withdraw it", a, "CANCEL", bLogin+"/"+url.PathEscape(m1), nil, "409 Already Delivered", nil); err != nil {
		return err
	}

	// 7. bob joins; the call lists both, in joining order.
	bp, err := c.expectCreated("bob joins", b, inv.URL, map[string]any{"session": "sip:bob@192.0.2.2:5060"}, call.URL+"/")
	if err != nil {
		return err
	}
	g, err := c.expect("bob reads the call", b, "GET", call.URL, nil, "200 OK", nil)
	if err != nil {
		return err
	}
	if err := checkCall(g.body, "planning", []string{ap.URL, bp.URL}, []string{"sip:alice@192.0.2.1:5060", "sip:bob@192.0.2.2:5060"}); err != nil {
		return fmt.Errorf("bob reads the call: %w", err)
	}

	// 8. Both leave, alice ends the call, both log out.
	if err := c.expectEmpty("bob leaves", b, "DELETE", bp.URL, "200 OK"); err != nil {
		return err
	}
	if err := c.expectEmpty("alice leaves", a, "DELETE", ap.URL, "200 OK"); err != nil {
		return err
	}
	if err := c.expectEmpty("alice ends the call", a, "DELETE", call.URL, "200 OK"); err != nil {
		return err
	}
	if _, err := c.expect("the call is gone", b, "GET", call.URL, nil, "404 Not Found", nil); err != nil {
		return err
	}
	st.close()
	if err := c.expectEmpty("bob logs out", b, "DELETE", bLogin+"/"+url.PathEscape(bc.ID), "200 OK"); err != nil {
		return err
	}
	return c.expectEmpty("alice logs out", a, "DELETE", aLogin+"/"+url.PathEscape(ac.ID), "200 OK")
}

// checkCall checks the body of GET /call/<id>: the call's fields (subject),
// then "children", the last key: [{"url", "session"}] in joining order.
func checkCall(body []byte, subject string, urls, sessions []string) error {
	keys, err := topKeys(body)
	if err != nil {
		return fmt.Errorf("body %s: %v", body, err)
	}
	if len(keys) == 0 || keys[len(keys)-1] != "children" {
		return fmt.Errorf("body %s: keys %v, want the call's fields then \"children\"", body, keys)
	}
	var call struct {
		Subject  string `json:"subject"`
		Children []struct {
			URL     string `json:"url"`
			Session string `json:"session"`
		} `json:"children"`
	}
	if err := json.Unmarshal(body, &call); err != nil {
		return fmt.Errorf("body %s: %v", body, err)
	}
	var gotURLs, gotSessions []string
	for _, ch := range call.Children {
		gotURLs = append(gotURLs, ch.URL)
		gotSessions = append(gotSessions, ch.Session)
	}
	if call.Subject != subject || !reflect.DeepEqual(gotURLs, urls) || !reflect.DeepEqual(gotSessions, sessions) {
		return fmt.Errorf("body %s: want subject %q and children %v with sessions %v, in joining order", body, subject, urls, sessions)
	}
	return nil
}

// topKeys returns the keys of a JSON object in the order they come.
func topKeys(b []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// short is the first line of a body, at most 200 bytes, for printing.
func short(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = append(b[:i:i], " ..."...)
	}
	if len(b) > 200 {
		b = append(b[:200:200], " ..."...)
	}
	return b
}
