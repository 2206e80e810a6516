package pluginrpc

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// hostLog returns a logger like the host's (text, no time, every level)
// and the buffer it writes to.
func hostLog() (*slog.Logger, *lockedBuffer) {
	var buf lockedBuffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug - 4,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(h), &buf
}

// TestLineWriter checks that a line a plugin writes becomes one record of
// the host's log: a log record keeps its level, message and attributes
// (not quoted inside the host's message), any other line is text.
func TestLineWriter(t *testing.T) {
	cases := []struct {
		name, line, want string
	}{
		{"slog text", `time=2024-05-06T07:08:09.000Z level=WARN msg="disk \"low\"" free=3 path="/a b"`,
			`level=WARN msg="disk \"low\"" plugin=p free=3 path="/a b"`},
		{"slog text without time", `level=INFO msg=ready`, `level=INFO msg=ready plugin=p`},
		{"slog text debug", `time=2024-05-06T07:08:09.000Z level=DEBUG msg=x`, `level=DEBUG msg=x plugin=p`},
		{"slog text level offset", `time=2024-05-06T07:08:09.000Z level=INFO+2 msg=x`, `level=INFO+2 msg=x plugin=p`},
		{"slog text group", `time=2024-05-06T07:08:09.000Z level=ERROR msg=failed req.id=12 req.path=/x err="open caf\xe9: no"`,
			`level=ERROR msg=failed plugin=p req.id=12 req.path=/x err="open caf\xe9: no"`},
		{"slog text not utf-8", `time=2024-05-06T07:08:09.000Z level=INFO msg="caf\xe9"`, `level=INFO msg="caf\xe9" plugin=p`},
		{"slog json", `{"time":"2024-05-06T07:08:09Z","level":"ERROR","msg":"failed","n":42,"f":1.5,"ok":true,"g":{"a":"x y","b":{"c":1}},"l":[1,"a"],"z":null}`,
			`level=ERROR msg=failed plugin=p n=42 f=1.5 ok=true g.a="x y" g.b.c=1 l="[1 a]" z=<nil>`},
		{"hclog json", `{"@level":"warn","@message":"plugin: something","@module":"pluginrpc","@timestamp":"2024-05-06T07:08:09.000000Z","k":"v"}`,
			`level=WARN msg="plugin: something" plugin=p logger=pluginrpc k=v`},
		{"hclog trace", `{"@level":"trace","@message":"t","@timestamp":"2024-05-06T07:08:09.000000Z"}`, `level=DEBUG-4 msg=t plugin=p`},
		{"plain", `panic: boom`, `level=INFO msg="panic: boom" plugin=p stream=stderr`},
		{"pairs without a level", `a=b c=d`, `level=INFO msg="a=b c=d" plugin=p stream=stderr`},
		{"text without a message", `time=x level=INFO k=v`, `level=INFO msg="time=x level=INFO k=v" plugin=p stream=stderr`},
		{"text with a bad level", `time=x level=LOUD msg=m`, `level=INFO msg="time=x level=LOUD msg=m" plugin=p stream=stderr`},
		{"text with a broken quote", `time=x level=INFO msg="m`, `level=INFO msg="time=x level=INFO msg=\"m" plugin=p stream=stderr`},
		{"json after junk", `{"level":"INFO","msg":"x"} tail`, `level=INFO msg="{\"level\":\"INFO\",\"msg\":\"x\"} tail" plugin=p stream=stderr`},
		{"json without a message", `{"level":"INFO"}`, `level=INFO msg="{\"level\":\"INFO\"}" plugin=p stream=stderr`},
		{"json not an object", `{"level"`, `level=INFO msg="{\"level\"" plugin=p stream=stderr`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, buf := hostLog()
			w := newLineWriter(l.With("plugin", "p"), "stderr")
			// In two writes, the line cut in the middle.
			half := len(c.line) / 2
			w.Write([]byte(c.line[:half]))
			w.Write([]byte(c.line[half:] + "\r\n"))
			if got := buf.String(); got != c.want+"\n" {
				t.Errorf("line %q\ngot  %q\nwant %q", c.line, got, c.want+"\n")
			}
		})
	}
}

// TestPluginLog checks the log lines of a plugin process as they reach the
// host's log: each a record of its own with the plugin's name, level,
// message and attributes, whichever way the plugin wrote to stderr.
func TestPluginLog(t *testing.T) {
	l, buf := hostLog()
	c, err := Load(t.Context(), Config{Name: "test", Cmd: childCmd("serve"), Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := handlerOf(t, c, "GET /log").Handle(t.Context(), &core.Request{Method: "GET"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`level=WARN msg="text record" plugin=test who="a b" n=42 path="/caf\xe9"` + "\n",
		`level=ERROR msg="json record" plugin=test n=7 g.k="v w"` + "\n",
		`level=INFO msg="a plain line" plugin=test stream=stderr` + "\n",
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", buf.String())
		}
	})
	poll.Until(t, 10*time.Second, "the plugin's log lines", func() bool {
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				return false
			}
		}
		return true
	})
}
