package pluginrpc

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/represent"
)

// fuzzTargets are the requests FuzzTransports builds: the fuzzed path is
// appended to prefix (percent-encoded), the fuzzed query follows it, and
// the fuzzed body goes with the methods that send one. The selector picks
// one, modulo their number.
var fuzzTargets = []struct {
	method, prefix string
	body           bool
}{
	{"GET", "/bytes", false},
	{"PUT", "/bytes", true},
	{"POST", "/alias", true}, // a rewrite with a variable, then echo
	{"GET", "/echo", false},
	{"GET", "/users", false}, // a bound object, rendered by core
	{"GET", "/xml/users", false},
	{"GET", "/plain/bytes", false},
	{"GET", "/fail-with", false}, // a 500 with request data in its text
	{"GET", "/named", false},     // a download whose name is request data
	{"PUT", "/setting/fuzz", true},
	{"GET", "/value", false},
}

// fuzzRequest builds the raw request of target number sel.
func fuzzRequest(sel uint8, path, query, agent, body []byte) string {
	tg := fuzzTargets[int(sel)%len(fuzzTargets)]
	var b strings.Builder
	b.WriteString(tg.method + " " + tg.prefix)
	for _, c := range path {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/.-_~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if len(query) > 0 {
		// As sent: only what would end the request target is encoded.
		b.WriteByte('?')
		for _, c := range query {
			if c <= ' ' || c == 0x7f || c == '#' {
				fmt.Fprintf(&b, "%%%02X", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteString(" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n")
	// Header values as sent, but for the bytes that would end the line
	// (any other control byte is refused alike by net/http in both).
	value := strings.ReplaceAll(strings.ReplaceAll(string(agent), "\r", " "), "\n", " ")
	b.WriteString("User-Agent: " + value + "\r\nX-Test: " + value + "\r\n")
	if sel&0x80 != 0 {
		b.WriteString("Content-Type: " + value + "\r\n")
	} else if sel&0x40 != 0 {
		b.WriteString("Content-Type: application/json\r\n")
	} else {
		b.WriteString("Content-Type: text/plain\r\n")
	}
	if tg.body {
		b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		b.Write(body)
	} else {
		b.WriteString("\r\n")
	}
	return b.String()
}

// FuzzTransports sends arbitrary bytes as the path, the query, header
// values and the body to the test plugin in process and in a plugin process
// (over its Requests stream), and requires the same answer, byte for
// byte but the Date header, from each: whatever a request holds, the
// boundary must not change the answer (in protocol version 1 any byte that
// is not UTF-8 answered 500).
//
//	go test -run '^$' -fuzz FuzzTransports -fuzztime 60s ./pluginrpc
func FuzzTransports(f *testing.F) {
	// The three reports of issue 7, in the test plugin's terms.
	f.Add(uint8(4), []byte("/0"), []byte(nil), []byte("\xff"), []byte(nil))        // GET /users/0, User-Agent: \xff
	f.Add(uint8(8), []byte("/caf\xe9.txt"), []byte(nil), []byte("x"), []byte(nil)) // a file name that is not UTF-8
	f.Add(uint8(0), []byte("/caf\xe9.txt"), []byte("name=caf\xe9"), []byte("x"), []byte(nil))
	f.Add(uint8(9), []byte(nil), []byte(nil), []byte("x"), []byte("\xff")) // PUT a text setting \xff
	f.Add(uint8(1|0x80), []byte("/\xff/\x00"), []byte("a=%zz&\xc3\x28"), []byte("text/\xe9"), []byte("\x00\xff\xfe"))
	f.Add(uint8(2), []byte("/deep/\xe9"), []byte("q"), []byte("\xe9"), []byte("{}"))
	f.Add(uint8(5), []byte("/0"), []byte("\xe9"), []byte("\xe9"), []byte(nil))
	f.Add(uint8(6), []byte("/\xe9"), []byte("\xe9"), []byte("\xe9"), []byte(nil))
	f.Add(uint8(7), []byte("/\xe9"), []byte("\xe9"), []byte("\xe9"), []byte(nil))
	f.Add(uint8(3), []byte("/\xe9"), []byte("\xe9"), []byte("\xe9"), []byte(nil))
	f.Add(uint8(10|0x40), []byte(nil), []byte(nil), []byte(nil), []byte(nil))
	rng := rand.New(rand.NewPCG(7, 7))
	random := func(n int) []byte {
		b := make([]byte, rng.IntN(n))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for range 8 {
		f.Add(uint8(rng.Uint32()), random(24), random(24), random(16), random(64))
	}

	names := []string{"direct", "stream"}
	servers := map[string]*testServer{}
	ps := map[string]plugins.Plugin{
		"direct": testPlugin{},
		"stream": load(f, Config{Name: "test", Cmd: childCmd("serve")}),
	}
	for _, name := range names {
		servers[name] = newTestServer(f, pluginhost.Entry{Name: "represent", Plugin: represent.Plugin{}}, pluginhost.Entry{Name: "test", Plugin: ps[name]})
	}
	f.Fuzz(func(t *testing.T, sel uint8, path, query, agent, body []byte) {
		requests := []string{fuzzRequest(sel, path, query, agent, body)}
		if fuzzTargets[int(sel)%len(fuzzTargets)].prefix == "/setting/fuzz" {
			requests = append(requests, "GET /setting/fuzz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
		}
		for _, request := range requests {
			want := servers["direct"].raw(t, request)
			for _, name := range names[1:] {
				if got := servers[name].raw(t, request); got != want {
					t.Fatalf("request %q\n%s answers\n%q\nin process:\n%q", request, name, got, want)
				}
			}
		}
	})
}
