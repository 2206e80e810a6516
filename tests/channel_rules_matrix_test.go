package tests

import (
	"slices"
	"testing"
)

// TestChannelRulesMatrix: for each operation and each kind of caller, a
// rule that allows exactly that operation to exactly that kind
// (docs/channel.md#permissions): the caller of that kind is allowed, the
// three others are denied, through every door that has the operation, over
// real connections. Each allowed change and each denied one is checked
// afterwards by the administrator, who may read everything.
//
// The cells of one rule live under R = /<top>/<door>-<op>-<kind>, created
// by ann (so ann is "self" there), with the group [bob] and one existing
// child e-<caller kind> per caller, so the callers never touch each
// other's resources. The rule is set on R; the row read-hidden sets it on
// each child instead. Either way a denied read answers "not found" and a
// stream starts as on a missing resource, exactly as where no resource is
// (docs/channel.md#hidden-resources): a caller who may not read R may not
// read anything below it, which is then missing to it. The row subscribe
// lets every kind read R, so that SUBSCRIBE is judged by its own letter.
//
// Doors and the cells they do not have:
//   - ws, the WebSocket: every operation. NOTIFY is checked as "subscribe"
//     (letter s), with the administrator subscribed to hear it.
//   - http, GET|PUT|POST|DELETE /channel/<path>: no subscribe and no
//     NOTIFY (both are WebSocket methods only).
//   - watch and sse, the GET kept open (?watch, Accept: text/event-stream):
//     read only.
func TestChannelRulesMatrix(t *testing.T) {
	t.Parallel()
	// op is one row of the matrix: the letter of the rule, whether the rule
	// is set on the child itself, and the doors that have it.
	type op struct {
		name       string
		letter     string
		onTarget   bool // the rule is on R/e-<kind>, not on R
		doors      []string
		deniedRead bool // a denial of this row reads "not found"
		readAll    bool // the rule lets every kind read too
		deniedOK   bool // a denial answers success, as on a missing resource
	}
	ops := []op{
		{name: "create", letter: "c", doors: []string{"ws", "http"}},      // PUT of a new child
		{name: "create-post", letter: "c", doors: []string{"ws", "http"}}, // POST: judged at the new child
		{name: "read", letter: "r", deniedRead: true, doors: []string{"ws", "http", "watch", "sse"}},
		{name: "read-hidden", letter: "r", onTarget: true, deniedRead: true, doors: []string{"ws", "http", "watch", "sse"}},
		{name: "update", letter: "u", doors: []string{"ws", "http"}},
		{name: "delete", letter: "d", doors: []string{"ws", "http"}},
		{name: "subscribe", letter: "s", readAll: true, doors: []string{"ws"}}, // no HTTP door: SUBSCRIBE is a WebSocket method
		// SUBSCRIBE with "stream": true is checked as a read: denied, it
		// succeeds as on a missing resource and delivers nothing.
		{name: "subscribe-stream", letter: "r", deniedOK: true, doors: []string{"ws"}},
		{name: "notify", letter: "s", doors: []string{"ws"}}, // no HTTP door: NOTIFY is a WebSocket method
	}
	doors := []string{"ws", "http", "watch", "sse"}

	eachChannelMode(t, func(t *testing.T, m mode) {
		rs := sharedRules(t, m)
		g := clients(t, rs.chanServer)
		conns := map[string]*wsClient{}
		for _, c := range callers {
			conns[c.kind] = rs.dialAs(g, "$"+c.kind, c)
		}
		ad := rs.dialAs(g, "$admin", admin)
		top := "/" + uniq("matrix-")
		id := 0
		next := func() int { id++; return id }

		// adminGet reads path as the administrator over HTTP.
		adminGet := func(t *testing.T, path, status, body string) {
			t.Helper()
			r := rs.as(admin, "GET", path, "")
			if r.StatusLine != "HTTP/1.1 "+status || body != "-" && r.Body != body {
				t.Errorf("the administrator reads %s: %q %q, want %q %q", path, r.StatusLine, r.Body, "HTTP/1.1 "+status, body)
			}
		}
		// count returns the administrator's count of the children of path.
		count := func(t *testing.T, path string) string {
			t.Helper()
			return rs.must(admin, "GET", path+"?deep=0", "", "200 OK").Body
		}

		for _, door := range doors {
			for _, o := range ops {
				if !slices.Contains(o.doors, door) {
					continue
				}
				for _, rule := range callers {
					ruleText := rule.kind + ":" + o.letter
					if o.readAll {
						ruleText = ""
						for _, k := range callers {
							if ruleText != "" {
								ruleText += " "
							}
							ruleText += k.kind + ":r"
							if k.kind == rule.kind {
								ruleText += o.letter
							}
						}
					}
					R := top + "/" + door + "-" + o.name + "-" + rule.kind
					rs.must(ann, "PUT", R, `{"cell":1}`, "200 OK")
					for _, c := range callers {
						rs.must(ann, "PUT", R+"/e-"+c.kind, `{"v":0}`, "200 OK")
					}
					eff := ""
					for _, k := range callers {
						if eff != "" {
							eff += " "
						}
						if k.kind == rule.kind {
							eff += ruleText
						} else {
							eff += k.kind + ":-"
						}
					}
					if o.readAll {
						eff = ruleText
					}
					if o.onTarget {
						rs.setRules(ann, R, `{"group":["`+bob.email+`"]}`)
						for _, c := range callers {
							rs.setRules(ann, R+"/e-"+c.kind, `{"rules":"`+ruleText+`"}`).
								check(t, "RULES of "+R+"/e-"+c.kind, R+"/e-"+c.kind, ruleText, "-", ann.email, eff)
						}
					} else {
						rs.setRules(ann, R, `{"rules":"`+ruleText+`","group":["`+bob.email+`"]}`).
							check(t, "RULES of "+R, R, ruleText, `["`+bob.email+`"]`, ann.email, eff)
					}
					if o.name == "notify" {
						for _, c := range callers {
							n := next()
							wantCall(t, ad, msg("SUBSCRIBE", R+"/e-"+c.kind, n, ""), okReply(n, `"epoch":"E"`))
						}
					}

					for _, c := range callers {
						allowed := c.kind == rule.kind
						verdict := "denied"
						if allowed {
							verdict = "allowed"
						}
						t.Run(door+"/"+o.name+"/"+ruleText+"/"+c.kind+"/"+verdict, func(t *testing.T) {
							target := R + "/e-" + c.kind
							denial := "forbidden"
							if o.deniedRead {
								denial = "not found"
							}
							switch door {
							case "ws":
								ws := conns[c.kind]
								n := next()
								var message, success string
								switch o.name {
								case "create":
									message, success = msg("PUT", R+"/n-"+c.kind, n, `"entity":{"new":1},"persistent":true`), okReply(n, "")
								case "create-post":
									message, success = msg("POST", R, n, `"id":"p-`+c.kind+`","entity":{"new":2},"persistent":true`), okReply(n, `"id":"p-`+c.kind+`"`)
								case "read", "read-hidden":
									message, success = msg("GET", target, n, ""), okReply(n, `"resource":`+jsonString(target)+`,"type":"application/json","entity":{"v":0}`)
								case "update":
									message, success = msg("PUT", target, n, `"entity":{"v":1},"persistent":true`), okReply(n, "")
								case "delete":
									message, success = msg("DELETE", target, n, ""), okReply(n, "")
								case "subscribe":
									message, success = msg("SUBSCRIBE", target, n, ""), okReply(n, `"epoch":"E"`)
								case "subscribe-stream":
									message, success = msg("SUBSCRIBE", target, n, `"stream":true`), okReply(n, `"epoch":"E"`)
								case "notify":
									message, success = msg("NOTIFY", target, n, `"data":{"k":"`+c.kind+`"}`), okReply(n, `"sent_count":1`)
								}
								want := failReply(n, denial)
								if allowed || o.deniedOK {
									want = success
								}
								wantCall(t, ws, message, want)
								if o.name == "notify" && allowed {
									ad.expect(`{"notify":"NOTIFY","resource":` + jsonString(target) + `,"data":{"k":"` + c.kind + `"},"from":$` + c.kind + `,"seq":N}`)
								}
							case "http":
								var r response
								before := ""
								switch o.name {
								case "create":
									r = rs.as(c, "PUT", R+"/n-"+c.kind, `{"new":1}`)
								case "create-post":
									before = count(t, R)
									r = rs.as(c, "POST", R, `{"new":2}`)
								case "read", "read-hidden":
									r = rs.as(c, "GET", target, "")
								case "update":
									r = rs.as(c, "PUT", target, `{"v":1}`)
								case "delete":
									r = rs.as(c, "DELETE", target, "")
								}
								switch {
								case allowed && o.name == "create-post":
									wantHTTP(t, r, "201 Created", "-")
									if loc := r.Header.Get("Location"); loc == "" {
										t.Errorf("POST: no Location")
									} else if got := rs.httpJSON("GET", loc, "", rs.headers(admin)...); got.Body != `{"new":2}` {
										t.Errorf("the administrator reads %s: %q %q", loc, got.StatusLine, got.Body)
									}
								case allowed && (o.name == "read" || o.name == "read-hidden"):
									wantHTTP(t, r, "200 OK", `{"v":0}`)
								case allowed:
									wantHTTP(t, r, "200 OK", `{}`)
								case o.deniedRead:
									wantHTTP(t, r, "404 Not Found", "-")
								default:
									wantDenied(t, r, c)
								}
								if o.name == "create-post" && !allowed {
									if after := count(t, R); after != before {
										t.Errorf("a denied POST: the children of %s went from %s to %s", R, before, after)
									}
								}
							case "watch", "sse":
								headers, path := rs.headers(c), target+"?watch"
								if door == "sse" {
									headers, path = append(headers, "Accept: text/event-stream"), target
								}
								s := rs.openStream("/channel"+path, headers...)
								defer s.conn.Close()
								switch {
								case allowed:
									if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
										t.Fatalf("the stream: %q, want 200 OK", s.Resp.StatusLine)
									}
									first := ""
									if door == "sse" {
										first = s.event().Data
									} else {
										first = s.line()
									}
									if field(first, "entity") != `{"v":0}` || field(first, "resource") != jsonString(target) {
										t.Errorf("the stream's first message %s, want the state of %s", first, target)
									}
								case o.deniedRead:
									// As on a missing resource.
									if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
										t.Fatalf("the stream: %q, want 200 OK", s.Resp.StatusLine)
									}
									first := ""
									if door == "sse" {
										first = s.event().Data
									} else {
										first = s.line()
									}
									if want := `{"resource":` + jsonString(target) + `,"type":null,"entity":null}`; first != want {
										t.Errorf("the stream's first message %s, want %s", first, want)
									}
								default:
									wantDenied(t, response{StatusLine: s.Resp.StatusLine, Header: s.Resp.Header}, c)
								}
							}
							// The administrator sees what happened.
							switch o.name {
							case "create":
								if allowed {
									adminGet(t, R+"/n-"+c.kind, "200 OK", `{"new":1}`)
								} else {
									adminGet(t, R+"/n-"+c.kind, "404 Not Found", "-")
								}
							case "create-post":
								if door == "ws" {
									if allowed {
										adminGet(t, R+"/p-"+c.kind, "200 OK", `{"new":2}`)
									} else {
										adminGet(t, R+"/p-"+c.kind, "404 Not Found", "-")
									}
								}
							case "update":
								if allowed {
									adminGet(t, target, "200 OK", `{"v":1}`)
								} else {
									adminGet(t, target, "200 OK", `{"v":0}`)
								}
							case "delete":
								if allowed {
									adminGet(t, target, "404 Not Found", "-")
								} else {
									adminGet(t, target, "200 OK", `{"v":0}`)
								}
							}
						})
					}
				}
			}
		}
		// No denied NOTIFY reached the administrator.
		ad.quiet()
		for _, c := range conns {
			c.quiet()
		}
	})
}
