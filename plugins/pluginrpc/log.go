package pluginrpc

import (
	"bytes"
	"io"
	"log"
	"log/slog"
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
// output end up in the host's log this way.
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
			w.l.Info(string(line), "stream", w.stream)
		}
		w.buf = w.buf[min(i+1, len(w.buf)):]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

var (
	_ hclog.Logger = (*hclogger)(nil)
	_ io.Writer    = (*lineWriter)(nil)
)
