package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// httpDoor speaks the HTTP door of docs/channel.md ("The HTTP door") to
// the nodes of an Env and records each operation in a History. Every
// request is bounded by timeout.
type httpDoor struct {
	env     Env
	hist    *History
	client  *http.Client
	timeout time.Duration
}

// newHTTPDoor returns a door with its own connections (kept alive per
// node), each request bounded by timeout.
func newHTTPDoor(env Env, hist *History, timeout time.Duration) *httpDoor {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     30 * time.Second,
	}
	return &httpDoor{env: env, hist: hist, client: &http.Client{Transport: tr}, timeout: timeout}
}

// close ends the door's idle connections.
func (d *httpDoor) close() { d.client.CloseIdleConnections() }

// answer is what one request got: the status line and body, or the error.
type answer struct {
	status string // "200 OK"
	code   int
	body   []byte
	err    error
}

// do sends one request to node and reads the whole answer, within the
// door's timeout.
func (d *httpDoor) do(ctx context.Context, node int, method, key string, body []byte) answer {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.env.URL(node)+"/channel"+key, rd)
	if err != nil {
		return answer{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answer{status: resp.Status, code: resp.StatusCode, err: err}
	}
	return answer{status: resp.Status, code: resp.StatusCode, body: b}
}

// refused reports whether err says the request was never sent: the
// connection to the node was refused (the node is down). Such a write did
// not happen.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// describe returns the answer as the history file shows it.
func (a answer) describe() string {
	if a.err != nil {
		if a.status != "" {
			return a.status + ": " + a.err.Error()
		}
		return a.err.Error()
	}
	return a.status + " " + strings.TrimSpace(string(a.body))
}

// writeOutcome classifies the answer to a PUT or DELETE that did not get
// one of the answers the docs give for it: refused (Fail), a timeout, a
// reset, a 5xx (`503 Service Unavailable` is the `unavailable` reason)
// (Unknown). Any other status is not one the docs allow: a problem.
func (d *httpDoor) writeOutcome(op *Op, a answer) {
	switch {
	case a.err != nil && a.status == "" && refused(a.err):
		op.Outcome = Fail
	case a.err != nil:
		op.Outcome = Unknown
	case a.code >= 500:
		op.Outcome = Unknown
	default:
		op.Outcome = Unknown
		d.hist.Problem(fmt.Sprintf("%s %s on node %d: unexpected answer %q", strings.ToUpper(op.Kind), op.Key, op.Node, a.describe()))
	}
}

// isEmptyObject reports whether body is the `{}` of a PUT or DELETE.
func isEmptyObject(body []byte) bool { return strings.TrimSpace(string(body)) == "{}" }

// put writes {"v":v} to key on node.
func (d *httpDoor) put(ctx context.Context, client, node int, model, key string, v int64) Op {
	op := Op{Model: model, Client: client, Node: node, Kind: "put", Key: key, Input: v}
	op.Call = d.hist.Clock.Now()
	a := d.do(ctx, node, http.MethodPut, key, []byte(`{"v":`+strconv.FormatInt(v, 10)+`}`))
	op.Return = d.hist.Clock.Now()
	op.Answer = a.describe()
	switch {
	case a.err == nil && a.status == "200 OK" && isEmptyObject(a.body):
		op.Outcome, op.Output = OK, OutOK
	default:
		d.writeOutcome(&op, a)
	}
	d.hist.Add(op)
	return op
}

// del deletes key on node.
func (d *httpDoor) del(ctx context.Context, client, node int, model, key string) Op {
	op := Op{Model: model, Client: client, Node: node, Kind: "delete", Key: key}
	op.Call = d.hist.Clock.Now()
	a := d.do(ctx, node, http.MethodDelete, key, nil)
	op.Return = d.hist.Clock.Now()
	op.Answer = a.describe()
	switch {
	case a.err == nil && a.status == "200 OK" && isEmptyObject(a.body):
		op.Outcome, op.Output = OK, OutOK
	case a.err == nil && a.status == "404 Not Found":
		op.Outcome, op.Output = OK, OutAbsent
	default:
		d.writeOutcome(&op, a)
	}
	d.hist.Add(op)
	return op
}

// get reads key on node; field is the entity's one field ("v" for the
// register, "c" for a created child). A read that fails (refused, a
// timeout, a 5xx) is recorded as Fail: it said nothing.
func (d *httpDoor) get(ctx context.Context, client, node int, model, key, field string) Op {
	op := Op{Model: model, Client: client, Node: node, Kind: "get", Key: key}
	op.Call = d.hist.Clock.Now()
	a := d.do(ctx, node, http.MethodGet, key, nil)
	op.Return = d.hist.Clock.Now()
	op.Answer = a.describe()
	switch {
	case a.err == nil && a.status == "200 OK":
		var e map[string]int64
		if err := json.Unmarshal(a.body, &e); err != nil || len(e) != 1 {
			op.Outcome = Fail
			d.hist.Problem(fmt.Sprintf("GET %s on node %d: entity %q is not {%q:N}", key, node, a.body, field))
			break
		}
		v, ok := e[field]
		if !ok {
			op.Outcome = Fail
			d.hist.Problem(fmt.Sprintf("GET %s on node %d: entity %q is not {%q:N}", key, node, a.body, field))
			break
		}
		op.Outcome, op.Output, op.Value = OK, OutOK, v
	case a.err == nil && a.status == "404 Not Found":
		op.Outcome, op.Output = OK, OutAbsent
	case a.err != nil || a.code >= 500:
		op.Outcome = Fail
	default:
		op.Outcome = Fail
		d.hist.Problem(fmt.Sprintf("GET %s on node %d: unexpected answer %q", key, node, a.describe()))
	}
	d.hist.Add(op)
	return op
}
