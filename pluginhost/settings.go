package pluginhost

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/reso-project/reso/plugins"
)

// SettingsMap is in-memory [plugins.Settings]: a map of shared settings
// safe for concurrent use. The zero value is empty, writable
// and ready.
type SettingsMap struct {
	// m is never changed once stored: a write stores a changed copy, so
	// that a read (every GET /config) takes no lock (the settings are a few).
	m        atomic.Pointer[map[string]string]
	mu       sync.Mutex // serializes writes
	readOnly []string
}

// NewSettings returns settings holding initial. The settings named in
// readOnly keep their initial value: no plugin can change them (the server
// passes [SettingHidden] here, so a plugin cannot unhide the server's own
// state files).
func NewSettings(initial map[string]string, readOnly ...string) *SettingsMap {
	s := &SettingsMap{readOnly: slices.Clone(readOnly)}
	m := maps.Clone(initial)
	if m == nil {
		m = map[string]string{}
	}
	s.m.Store(&m)
	return s
}

// Setting returns the value of name, "" when unset.
func (s *SettingsMap) Setting(_ context.Context, name string) (string, error) {
	if m := s.m.Load(); m != nil {
		return (*m)[name], nil
	}
	return "", nil
}

// SetSetting sets name to value; a read-only setting is an error.
func (s *SettingsMap) SetSetting(_ context.Context, name, value string) error {
	if slices.Contains(s.readOnly, name) {
		return fmt.Errorf("plugins: setting %q is read-only", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{}
	if old := s.m.Load(); old != nil {
		m = maps.Clone(*old)
	}
	m[name] = value
	s.m.Store(&m)
	return nil
}

var _ plugins.Settings = (*SettingsMap)(nil)
