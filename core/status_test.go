package core

import (
	"errors"
	"fmt"
	"testing"
)

func TestStatus(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		reason string
		line   string
	}{
		{"custom", 400, "Invalid Path", "400 Invalid Path"},
		{"empty reason", 404, "", "404 Not Found"},
		{"control character", 401, "Not\nAuthorized", "401 Unauthorized"},
		{"non-ASCII", 400, "Ungültig", "400 Bad Request"},
		{"too long", 400, string(make([]byte, 129)), "400 Bad Request"},
		{"code too small", 7, "Odd", "500 Internal Server Error"},
		{"code too large", 1000, "Odd", "500 Internal Server Error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Status(c.code, c.reason).Error(); got != c.line {
				t.Errorf("got %q, want %q", got, c.line)
			}
		})
	}
}

func TestStatusErrorIs(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		target error
		is     bool
	}{
		{"equal made anew", Status(404, "Not Found"), ErrNotFound, true},
		{"wrapped", fmt.Errorf("x: %w", Status(404, "Object Not Found")), ErrObjectNotFound, true},
		{"joined", errors.Join(errors.New("a"), ErrInvalidScope), ErrInvalidScope, true},
		{"same code, other reason", Status(404, "Object Not Found"), ErrNotFound, false},
		{"same reason, other code", Status(400, "Not Found"), ErrNotFound, false},
		{"plain error", errors.New("404 Not Found"), ErrNotFound, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := errors.Is(c.err, c.target); got != c.is {
				t.Errorf("errors.Is(%v, %v) = %v", c.err, c.target, got)
			}
		})
	}
	if se, ok := AsStatus(fmt.Errorf("x: %w", ErrBodyTooLarge)); !ok || se != ErrBodyTooLarge || se.Code() != 413 || se.Reason() != "Request Entity Too Large" {
		t.Errorf("AsStatus: %v %v", se, ok)
	}
	if _, ok := AsStatus(errors.New("x")); ok {
		t.Error("AsStatus of a plain error")
	}
}
