package core

import (
	"errors"
	"net/http"
	"strconv"
)

// StatusError is an error that answers a request with a status line: a code
// and an exact reason phrase such as "400 Invalid Path". Make one with
// [Status]. Its code and reason cannot be changed once it is made, so the
// common status errors below ([ErrNotFound], ...) always say what they say.
//
// StatusError is a comparable value: two status errors with the same code
// and reason are equal, so errors.Is(err, ErrNotFound) holds for any
// "404 Not Found" status error in err's chain, also one rebuilt from its
// code and reason after crossing a process boundary.
type StatusError struct {
	code   int
	reason string
}

// Code returns the status code, for example 404.
func (e StatusError) Code() int { return e.code }

// Reason returns the reason phrase, for example "Object Not Found".
func (e StatusError) Reason() string { return e.reason }

// Error returns the status line, for example "404 Object Not Found".
func (e StatusError) Error() string { return strconv.Itoa(e.code) + " " + e.reason }

// Status returns the status error with the given code and reason phrase.
// The reason must be a constant chosen by the program, never request data; a
// reason with characters outside printable ASCII (or longer than 128 bytes)
// is replaced by the standard phrase of the code. A code outside 100-999,
// which no status line can carry, gives 500 Internal Server Error.
func Status(code int, reason string) StatusError {
	if code < 100 || code > 999 {
		code, reason = http.StatusInternalServerError, ""
	}
	if !validReason(reason) {
		reason = http.StatusText(code)
	}
	return StatusError{code: code, reason: reason}
}

// AsStatus reports the status error in err's chain, if any.
func AsStatus(err error) (StatusError, bool) {
	var se StatusError
	if errors.As(err, &se) {
		return se, true
	}
	return StatusError{}, false
}

// Common status errors (docs/wire.md#status-line-table).
var (
	ErrNotFound         = Status(http.StatusNotFound, "Not Found")
	ErrMethodNotAllowed = Status(http.StatusMethodNotAllowed, "Method Not Allowed")
	ErrInvalidLength    = Status(http.StatusBadRequest, "Invalid Content-Length")
	ErrInvalidJSON      = Status(http.StatusBadRequest, "Invalid JSON content")
	ErrObjectNotFound   = Status(http.StatusNotFound, "Object Not Found")
	ErrInvalidScope     = Status(http.StatusBadRequest, "Invalid Scope")
	ErrBodyTooLarge     = Status(http.StatusRequestEntityTooLarge, "Request Entity Too Large")
	ErrInternal         = Status(http.StatusInternalServerError, "Internal Server Error")
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
