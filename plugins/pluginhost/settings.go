package pluginhost

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/reso-project/reso/plugins"
)

// SettingsMap is in-memory [plugins.Settings]: a map of shared settings
// safe for concurrent use. The zero value is empty, writable
// and ready.
type SettingsMap struct {
	mu       sync.RWMutex
	m        map[string]string
	readOnly []string
}

// NewSettings returns settings holding initial. The settings named in
// readOnly keep their initial value: no plugin can change them (the server
// passes [SettingHidden] here, so a plugin cannot unhide the server's own
// state files).
func NewSettings(initial map[string]string, readOnly ...string) *SettingsMap {
	s := &SettingsMap{m: make(map[string]string, len(initial)), readOnly: slices.Clone(readOnly)}
	for k, v := range initial {
		s.m[k] = v
	}
	return s
}

// Setting returns the value of name, "" when unset.
func (s *SettingsMap) Setting(_ context.Context, name string) (string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[name], nil
}

// SetSetting sets name to value; a read-only setting is an error.
func (s *SettingsMap) SetSetting(_ context.Context, name, value string) error {
	if slices.Contains(s.readOnly, name) {
		return fmt.Errorf("plugins: setting %q is read-only", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]string)
	}
	s.m[name] = value
	return nil
}

var _ plugins.Settings = (*SettingsMap)(nil)
