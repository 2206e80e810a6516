package app

import (
	"errors"
	"flag"
	"io"
	"log/slog"
)

// logFormat is the flag -log-format: the handler of the server's log.
type logFormat string

const (
	logText logFormat = "text" // log/slog's text handler: key=value (the default)
	logJSON logFormat = "json" // log/slog's JSON handler: one JSON object a line
)

func (f *logFormat) String() string {
	if f == nil || *f == "" {
		return string(logText)
	}
	return string(*f)
}

func (f *logFormat) Set(s string) error {
	switch logFormat(s) {
	case logText, logJSON:
		*f = logFormat(s)
		return nil
	}
	return errors.New("want text or json")
}

// logFormatFlag declares -log-format on fs, filling f.
func logFormatFlag(fs *flag.FlagSet, f *logFormat) {
	*f = logText
	fs.Var(f, "log-format", "format of the log on standard error: text (key=value) or json (one object a line); the access log (-access-log) included")
}

// newLogger returns the server's logger writing to w in format f.
func newLogger(f logFormat, w io.Writer) *slog.Logger {
	if f == logJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
