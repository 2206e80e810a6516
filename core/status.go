package core

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// StatusError is an error that answers a request with a status line: a code
// and an exact reason phrase such as "400 Invalid Path". Its Error method
// returns the status line.
type StatusError struct {
	Code   int
	Reason string
}

// Error returns the status line, for example "404 Object Not Found".
func (e *StatusError) Error() string { return strconv.Itoa(e.Code) + " " + e.Reason }

// Status returns a *StatusError with the given code and reason phrase. The
// reason must be a constant chosen by the program, never request data; a
// reason with characters outside printable ASCII is replaced by the standard
// phrase of the code.
func Status(code int, reason string) *StatusError {
	if !validReason(reason) {
		reason = http.StatusText(code)
	}
	return &StatusError{Code: code, Reason: reason}
}

// Errorf is like [Status] with a formatted reason. Use it only with constant
// formats and program data.
func Errorf(code int, format string, args ...any) *StatusError {
	return Status(code, fmt.Sprintf(format, args...))
}

// AsStatus reports the status error inside err, if any.
func AsStatus(err error) (*StatusError, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		return se, true
	}
	return nil, false
}

// Common status errors (docs/wire.md#status-line-table).
var (
	ErrNotFound           = Status(http.StatusNotFound, "Not Found")
	ErrMethodNotAllowed   = Status(http.StatusMethodNotAllowed, "Method Not Allowed")
	ErrInvalidLength      = Status(http.StatusBadRequest, "Invalid Content-Length")
	ErrInvalidJSON        = Status(http.StatusBadRequest, "Invalid JSON content")
	ErrObjectNotFound     = Status(http.StatusNotFound, "Object Not Found")
	ErrInvalidScope       = Status(http.StatusBadRequest, "Invalid Scope")
	ErrBodyTooLarge       = Status(http.StatusRequestEntityTooLarge, "Request Entity Too Large")
	ErrInternal           = Status(http.StatusInternalServerError, "Internal Server Error")
	ErrServiceUnavailable = Status(http.StatusServiceUnavailable, "Service Unavailable")
)

func validReason(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}
