package plugins

import (
	"context"
	"sync"
)

// Settings is an in-memory [Host]: a map of shared settings safe for
// concurrent use. The zero value is empty and ready.
type Settings struct {
	mu sync.RWMutex
	m  map[string]string
}

// NewSettings returns settings holding initial.
func NewSettings(initial map[string]string) *Settings {
	s := &Settings{m: make(map[string]string, len(initial))}
	for k, v := range initial {
		s.m[k] = v
	}
	return s
}

// Setting returns the value of name, "" when unset.
func (s *Settings) Setting(_ context.Context, name string) (string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[name], nil
}

// SetSetting sets name to value.
func (s *Settings) SetSetting(_ context.Context, name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]string)
	}
	s.m[name] = value
	return nil
}

var _ Host = (*Settings)(nil)
