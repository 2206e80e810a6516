package doors

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reso-project/reso/core"
)

// MaxExpires is the largest ?expires= the door accepts, in seconds (a
// year); the tree may bound leases further.
const MaxExpires = 365 * 24 * 3600

// Errors of the HTTP door's own checks.
var (
	errInvalidResource = core.Status(http.StatusBadRequest, "Invalid Resource")
	errInvalidExpires  = core.Status(http.StatusBadRequest, "Invalid Expires")
	errInvalidWatch    = core.Status(http.StatusBadRequest, "Invalid Watch")
	errInvalidEventID  = core.Status(http.StatusBadRequest, "Invalid Last-Event-ID")
	errBadTree         = core.Status(http.StatusBadGateway, "Bad Tree Reply")
	errRulesMethod     = core.Status(http.StatusMethodNotAllowed, "Method Not Allowed")
	errUnauthorized    = core.Status(http.StatusUnauthorized, "Unauthorized")
)

// Door is the HTTP door under /channel/ (docs/channel.md#the-http-door),
// or wherever it is mounted: each request is one message for the tree,
// sent with [core.Tree].Call.
//
//   - The resource is the path after the door's mount (core.Request.Path,
//     percent-decoded; "[attr]" kept) and the query, which passes through to the tree (deep, like,
//     limit, offset, order) but for the door's own parameters: expires and
//     watch.
//   - PUT and POST send the request body, which must be JSON (400 Invalid
//     JSON content), as the entity; an empty body sends none.
//   - ?expires=SECONDS (0 to MaxExpires; 400 Invalid Expires otherwise)
//     goes in the message as "expires": the resource is a lease the tree
//     deletes when that time passes without a refresh.
//   - A success answers GET with 200 and the entity as JSON, PUT and
//     DELETE with 200 and the reply's other fields as a JSON object ({} as
//     a rule), POST with 201 Created, a Location header naming the new
//     child as the client addresses it (under the door's mount,
//     core.Request.Consumed) and {"id": ...}.
//   - A failure answers with a status line that carries the reason: 404 Not
//     Found, 403 Forbidden, 400 Invalid Resource, 409 Exists, 400 Invalid
//     JSON content, 400 Invalid Entity, else 400 and the reason in title
//     case. A refusal of an anonymous caller answers 401 Unauthorized
//     instead of 403, and the host adds the challenge
//     (pluginhost.Host.Challenge).
//   - ?rules reads (GET) or changes (PUT, with a JSON object of "rules",
//     "group" and "owner") the rules of the resource with the tree's RULES
//     message (docs/channel.md#changing-rules-rules); it answers 200 and the
//     reply's fields. Other methods answer 405 Method Not Allowed.
//
// Bodies are bounded by the host's body limit (413 past it).
//
// A GET kept open (docs/channel.md#the-http-door) answers a GET with Accept:
// text/event-stream or ?watch (watch=diff, the default, or watch=full): a
// tree client of its own (a fresh id) subscribes to the
// resource's path ("since" from a Last-Event-ID header, when present) and
// reads the resource; the answer is a stream of events:
//
//   - the state: the resource as GET answers it over the channel,
//     {"resource", "type", "entity"} ({"resource": ..., "type": null,
//     "entity": null} while it does not exist); left out when Last-Event-ID
//     resumed the stream and the tree still held every notification since;
//   - with watch=diff, every notification of docs/channel.md#the-websocket-door, byte for byte,
//     its event id "EPOCH:SEQ": the epoch of the tree's history (from
//     SUBSCRIBE's reply) and the change's seq;
//   - with watch=full, the state again after each change (after each batch
//     of changes read at once), its event id that of the last change.
//
// Last-Event-ID is read as "EPOCH:SEQ" (sent to the tree as "since" and
// "epoch": another epoch gets the state first) or as a bare SEQ; anything
// else answers 400 Invalid Last-Event-ID.
//
// The host writes Server-Sent Events ("id: EPOCH:SEQ") to a client that asks
// for text/event-stream, else newline-delimited JSON. A subscription the
// tree refuses answers with the failure's status line (403 Forbidden, 400
// Invalid Resource, ...) before the stream starts. The stream ends when
// the client goes away or the tree disconnects its client (a slow
// consumer); the client is disconnected either way.
type Door struct {
	Tree core.Tree
	// KeepOpen keeps every GET open, as if it asked for a stream
	// (channelhost.Handler.Watch).
	KeepOpen bool
}

// Handle answers one request of the HTTP door.
func (d *Door) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	path, err := resourcePath(doorPath(req))
	if err != nil {
		return nil, err
	}
	q, err := parseQuery(req.Query)
	if err != nil {
		return nil, err
	}
	resource := path
	if q.rest != "" {
		resource += "?" + q.rest
	}
	if q.rules {
		return d.rules(ctx, req, resource)
	}
	if req.Method == http.MethodGet && (q.watch || d.KeepOpen || core.EventStream(req.Header)) {
		return Watch(ctx, d.Tree, req, resource, q.full)
	}
	m := newMessage(req.Method, resource, 1)
	if req.Method == http.MethodPut || req.Method == http.MethodPost {
		body, err := core.ReadBody(req.Body)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(body)) > 0 {
			var entity bytes.Buffer
			if err := json.Compact(&entity, body); err != nil {
				return nil, core.ErrInvalidJSON
			}
			m.raw("entity", entity.Bytes())
		}
	}
	if q.hasExpires {
		m.uint("expires", q.expires)
	}
	r, err := d.call(ctx, req, m)
	if err != nil {
		return nil, err
	}
	resp := &core.Response{ContentType: "application/json"}
	switch req.Method {
	case http.MethodGet:
		resp.Body = r.get("entity")
		if resp.Body == nil {
			resp.Body = []byte("null")
		}
	case http.MethodPost:
		var id string
		if err := json.Unmarshal(r.get("id"), &id); err != nil || id == "" {
			return nil, errBadTree
		}
		resp.Code = http.StatusCreated
		resp.Header = http.Header{"Location": {location(req, path, id)}}
		resp.Body = r.object()
	default:
		resp.Body = r.object()
	}
	return resp, nil
}

// call sends m for the caller of req and returns the tree's success reply,
// or the error to answer.
func (d *Door) call(ctx context.Context, req *core.Request, m *message) (*reply, error) {
	data, err := d.Tree.Call(ctx, newClientID("http-"), identity(req), m.bytes())
	if err != nil {
		return nil, treeError(ctx, err)
	}
	r, err := parseReply(data)
	if err != nil {
		return nil, errBadTree
	}
	if r.code != "success" {
		return nil, refusal(req, r.reason)
	}
	return r, nil
}

// refusal returns the error of a failed reply with reason: failure's,
// but 401 Unauthorized for a refused anonymous caller, whom credentials
// may help.
func refusal(req *core.Request, reason string) error {
	if reason == "forbidden" && req.Identity == nil {
		return errUnauthorized
	}
	return failure(reason)
}

// rules answers ?rules: GET reads the rules of resource, PUT changes them
// with the fields of the body's JSON object.
func (d *Door) rules(ctx context.Context, req *core.Request, resource string) (*core.Response, error) {
	m := newMessage("RULES", resource, 1)
	switch req.Method {
	case http.MethodGet:
	case http.MethodPut:
		body, err := core.ReadBody(req.Body)
		if err != nil {
			return nil, err
		}
		var change struct {
			Rules json.RawMessage `json:"rules"`
			Group json.RawMessage `json:"group"`
			Owner json.RawMessage `json:"owner"`
		}
		if err := json.Unmarshal(body, &change); err != nil || bytes.TrimSpace(body)[0] != '{' {
			return nil, core.ErrInvalidJSON
		}
		for _, f := range []struct {
			name  string
			value json.RawMessage
		}{{"rules", change.Rules}, {"group", change.Group}, {"owner", change.Owner}} {
			if f.value != nil {
				var v bytes.Buffer
				if err := json.Compact(&v, f.value); err != nil {
					return nil, core.ErrInvalidJSON
				}
				m.raw(f.name, v.Bytes())
			}
		}
	default:
		return nil, errRulesMethod
	}
	r, err := d.call(ctx, req, m)
	if err != nil {
		return nil, err
	}
	return &core.Response{ContentType: "application/json", Body: r.object()}, nil
}

// StreamWanted reports whether req asks for a GET kept open: a GET with
// Accept: text/event-stream or the query parameter watch; full is
// watch=full. A watch value other than diff or full is 400 Invalid Watch.
func StreamWanted(req *core.Request) (stream, full bool, err error) {
	if req.Method != http.MethodGet {
		return false, false, nil
	}
	q, err := parseQuery(req.Query)
	if err != nil {
		return false, false, err
	}
	return q.watch || core.EventStream(req.Header), q.full, nil
}

// doorPath returns the part of the path of req after the door's mount and
// the slash that follows it: req.Path when the mount consumed that slash
// (a route of /channel/), else req.Path without its first slash (a door
// mounted with http.StripPrefix("/rt/channel", ...), or at the root).
func doorPath(req *core.Request) string {
	if strings.HasSuffix(req.Consumed, "/") {
		return req.Path
	}
	return strings.TrimPrefix(req.Path, "/")
}

// resourcePath returns the tree path of the part of the request path
// after /channel/, rooted: "" is the root. It changes nothing else, so
// that the tree's parser alone decides which paths are valid, on every
// door: /channel//b or /channel/b/ answer 400 Invalid Resource as
// "//b" and "/b/" fail over the WebSocket. A path the tree would read
// otherwise than the request meant (not UTF-8, or holding ? or # once
// decoded) is refused here.
func resourcePath(p string) (string, error) {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "?#") {
		return "", errInvalidResource
	}
	return "/" + p, nil
}

// location returns the path of the child id of the tree path path, as the
// client of req addresses it: the door's mount (req.Consumed, such as
// /channel, or /rt/channel where an embedding server mounted the door)
// followed by the tree path.
func location(req *core.Request, path, id string) string {
	return escapePath(strings.TrimSuffix(req.Consumed, "/")) + escapePath(path) + "/" + url.PathEscape(id)
}

// escapePath percent-encodes each segment of a tree path for a header.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// query is the door's reading of a request's query.
type query struct {
	rest       string // the parameters for the tree, as sent
	hasExpires bool
	expires    uint64
	watch      bool // ?watch or ?watch=diff|full
	full       bool // watch=full
	rules      bool // ?rules
}

// parseQuery takes the door's own parameters (expires, watch, rules) out of the
// query and leaves the others, in order and as sent, for the tree.
func parseQuery(raw string) (query, error) {
	var q query
	if raw == "" {
		return q, nil
	}
	var rest []string
	for _, part := range strings.Split(raw, "&") {
		name, value, _ := strings.Cut(part, "=")
		switch unescape(name) {
		case "expires":
			n, err := strconv.ParseUint(unescape(value), 10, 64)
			if err != nil || n > MaxExpires {
				return q, errInvalidExpires
			}
			q.hasExpires, q.expires = true, n
		case "rules":
			q.rules = true
		case "watch":
			switch unescape(value) {
			case "", "diff":
			case "full":
				q.full = true
			default:
				return q, errInvalidWatch
			}
			q.watch = true
		default:
			if part != "" {
				rest = append(rest, part)
			}
		}
	}
	q.rest = strings.Join(rest, "&")
	return q, nil
}

// unescape percent-decodes s; a malformed escape leaves s as it is.
func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// newClientID returns a fresh client id with prefix: 16 random hex
// digits after it.
func newClientID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// identity returns the identity the tree sees for req: the caller's
// e-mail, "" for an anonymous caller.
func identity(req *core.Request) string {
	if req.Identity == nil {
		return ""
	}
	return req.Identity.Email
}

var _ core.Handler = (*Door)(nil)
