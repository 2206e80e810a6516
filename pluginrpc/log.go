package pluginrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// hclogger passes go-plugin's own log messages to the host's slog logger.
// The lines of the plugin's standard error reach the log once, through
// lineWriter; go-plugin's second copy of them (through the sub-logger named
// after the program) is dropped.
type hclogger struct {
	l    *slog.Logger
	name string
	prog string // sub-logger name of the plugin's stderr lines
	args []any
}

func newHclog(l *slog.Logger, prog string) hclog.Logger {
	return &hclogger{l: l, prog: prog}
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	all := make([]any, 0, len(h.args)+len(args)+2)
	if h.name != "" {
		all = append(all, "logger", h.name)
	}
	all = append(append(all, h.args...), args...)
	for i := 0; i+1 < len(all); i += 2 {
		if all[i] == "plugin" { // go-plugin's name for the program path
			all[i] = "program"
		}
	}
	switch {
	case level == hclog.NoLevel || level == hclog.Info:
		h.l.Info(msg, all...)
	case level <= hclog.Debug:
		h.l.Debug(msg, all...)
	case level == hclog.Warn:
		h.l.Warn(msg, all...)
	default:
		h.l.Error(msg, all...)
	}
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }
func (h *hclogger) IsTrace() bool                 { return false }
func (h *hclogger) IsDebug() bool                 { return false }
func (h *hclogger) IsInfo() bool                  { return true }
func (h *hclogger) IsWarn() bool                  { return true }
func (h *hclogger) IsError() bool                 { return true }
func (h *hclogger) ImpliedArgs() []any            { return h.args }
func (h *hclogger) Name() string                  { return h.name }
func (h *hclogger) SetLevel(hclog.Level)          {}
func (h *hclogger) GetLevel() hclog.Level         { return hclog.Info }

func (h *hclogger) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), args...)
	return &c
}

func (h *hclogger) Named(name string) hclog.Logger {
	if name == h.prog {
		return hclog.NewNullLogger()
	}
	c := *h
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo)
}

func (h *hclogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}

// lineWriter logs each line written to it; a plugin's standard error and
// output end up in the host's log this way. A line that is itself a log
// record (what log/slog's text or JSON handler writes, or hclog's JSON
// format) becomes one record of the host's log with the plugin's level,
// message and attributes, not a message that quotes another log line; any
// other line is logged at info level as it is, with the stream it came on.
type lineWriter struct {
	l      *slog.Logger
	stream string

	mu  sync.Mutex
	buf []byte
}

// maxLine is where a line without a newline is cut.
const maxLine = 64 << 10

func newLineWriter(l *slog.Logger, stream string) *lineWriter {
	return &lineWriter{l: l, stream: stream}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				i = len(w.buf)
			} else {
				break
			}
		}
		line := bytes.TrimRight(w.buf[:i], "\r")
		if len(line) > 0 {
			w.log(line)
		}
		w.buf = w.buf[min(i+1, len(w.buf)):]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

// log logs one line.
func (w *lineWriter) log(line []byte) {
	if r, ok := parseRecord(line); ok {
		w.l.LogAttrs(context.Background(), r.level, r.msg, r.attrs...)
		return
	}
	w.l.Info(string(line), "stream", w.stream)
}

// record is a log record read from a plugin's output. Its time is dropped:
// the host's record has its own.
type record struct {
	level slog.Level
	msg   string
	attrs []slog.Attr
}

// parseRecord reads line as a log record: a JSON object (log/slog's
// JSONHandler, or hclog's JSON format) or key=value pairs (log/slog's
// TextHandler). Either must hold a level and a message.
func parseRecord(line []byte) (record, bool) {
	if line[0] == '{' {
		return parseJSONRecord(line)
	}
	return parseTextRecord(string(line))
}

// parseLevel reads a level as slog writes it ("INFO", "WARN+2") or as
// hclog does ("trace", "info").
func parseLevel(s string) (slog.Level, bool) {
	if strings.EqualFold(s, "trace") {
		return slog.LevelDebug - 4, true
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, false
	}
	return l, true
}

// parseTextRecord reads the output of log/slog's TextHandler: key=value
// pairs separated by spaces, a key or value that needs it quoted as Go
// quotes it. The keys time, level and msg are the record's own; the other
// attributes keep their order and their text (a group's attributes keep
// their dotted keys).
func parseTextRecord(s string) (record, bool) {
	var (
		r                record
		hasLevel, hasMsg bool
		hasTime          bool
		key, value       string
		ok               bool
		first            = true
	)
	for s != "" {
		key, s, ok = textToken(s, '=')
		if !ok || s == "" || s[0] != '=' {
			return record{}, false
		}
		value, s, ok = textToken(s[1:], ' ')
		if !ok {
			return record{}, false
		}
		if s != "" {
			if s[0] != ' ' {
				return record{}, false
			}
			s = s[1:]
		}
		switch {
		case key == "time" && first:
			hasTime = true
		case key == "level" && !hasLevel:
			if r.level, hasLevel = parseLevel(value); !hasLevel {
				return record{}, false
			}
		case key == "msg" && !hasMsg:
			r.msg, hasMsg = value, true
		default:
			r.attrs = append(r.attrs, slog.String(key, value))
		}
		if first && !hasTime && !hasLevel {
			return record{}, false // a line that happens to start with a=b
		}
		first = false
	}
	return r, hasLevel && hasMsg
}

// textToken reads a quoted token, or a bare one up to stop (or the end).
func textToken(s string, stop byte) (tok, rest string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", false
		}
		tok, err = strconv.Unquote(q)
		return tok, s[len(q):], err == nil
	}
	i := strings.IndexByte(s, stop)
	if i < 0 {
		i = len(s)
	}
	tok = s[:i]
	if stop == '=' && (tok == "" || strings.ContainsAny(tok, " \"")) {
		return "", "", false
	}
	return tok, s[i:], true
}

// parseJSONRecord reads a JSON object written by log/slog's JSONHandler
// (keys time, level, msg) or by hclog (@timestamp, @level, @message,
// @module, which becomes the attribute logger). The other members keep
// their order; objects become groups.
func parseJSONRecord(line []byte) (record, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	attrs, err := jsonObject(dec)
	if err != nil || dec.More() {
		return record{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return record{}, false // something after the object
	}
	var (
		r                record
		hasLevel, hasMsg bool
	)
	for _, a := range attrs {
		str := a.Value.Kind() == slog.KindString
		switch {
		case (a.Key == "time" || a.Key == "@timestamp") && str:
		case (a.Key == "level" || a.Key == "@level") && str && !hasLevel:
			if r.level, hasLevel = parseLevel(a.Value.String()); !hasLevel {
				return record{}, false
			}
		case (a.Key == "msg" || a.Key == "@message") && str && !hasMsg:
			r.msg, hasMsg = a.Value.String(), true
		case a.Key == "@module":
			r.attrs = append(r.attrs, slog.Attr{Key: "logger", Value: a.Value})
		default:
			r.attrs = append(r.attrs, a)
		}
	}
	return r, hasLevel && hasMsg
}

// jsonObject reads a JSON object from dec as attributes, in order.
func jsonObject(dec *json.Decoder) ([]slog.Attr, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var attrs []slog.Attr
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		v, err := jsonValue(dec)
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, slog.Attr{Key: key, Value: v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("unterminated object")
	}
	return attrs, nil
}

// jsonValue reads one JSON value from dec as a slog value.
func jsonValue(dec *json.Decoder) (slog.Value, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return slog.Value{}, err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		sub := json.NewDecoder(bytes.NewReader(raw))
		sub.UseNumber()
		attrs, err := jsonObject(sub)
		if err != nil {
			return slog.Value{}, err
		}
		return slog.GroupValue(attrs...), nil
	}
	var v any
	sub := json.NewDecoder(bytes.NewReader(raw))
	sub.UseNumber()
	if err := sub.Decode(&v); err != nil {
		return slog.Value{}, err
	}
	switch v := v.(type) {
	case string:
		return slog.StringValue(v), nil
	case bool:
		return slog.BoolValue(v), nil
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return slog.Int64Value(n), nil
		}
		if f, err := v.Float64(); err == nil {
			return slog.Float64Value(f), nil
		}
		return slog.StringValue(v.String()), nil
	}
	return slog.AnyValue(v), nil
}

var (
	_ hclog.Logger = (*hclogger)(nil)
	_ io.Writer    = (*lineWriter)(nil)
)
