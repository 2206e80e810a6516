package middleware

import (
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Log returns middleware that logs one line per request to logger: method,
// path, status code, bytes written and duration. A nil logger uses
// slog.Default().
func Log(logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				code := sw.code
				if code == 0 {
					code = http.StatusOK
				}
				logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", code),
					slog.Int64("bytes", sw.n),
					slog.Duration("duration", time.Since(start)))
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && code >= 200 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.n += int64(n)
	return n, err
}

// ReadFrom keeps io.Copy's sendfile path for downloads.
func (s *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := io.Copy(s.ResponseWriter, r)
	s.n += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
