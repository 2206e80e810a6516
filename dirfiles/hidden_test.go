package dirfiles

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

// countingHost counts the times the hidden setting is asked for.
type countingHost struct {
	*pluginhost.SettingsMap
	n atomic.Int32
}

func (h *countingHost) Setting(ctx context.Context, name string) (string, error) {
	if name == plugins.SettingHidden {
		h.n.Add(1)
	}
	return h.SettingsMap.Setting(ctx, name)
}

func TestHiddenSettingCached(t *testing.T) {
	host := &countingHost{SettingsMap: pluginhost.NewSettings(map[string]string{plugins.SettingHidden: "/a\n\n/b \n"})}
	h := newHidden(func(ctx context.Context) (string, error) { return host.Setting(ctx, plugins.SettingHidden) })
	now := time.Unix(1700000000, 0)
	h.now = func() time.Time { return now }
	for range 3 {
		paths, err := h.paths(context.Background())
		if err != nil || !slices.Equal(paths, []string{"/a", "/b "}) {
			t.Fatalf("%q %v", paths, err)
		}
	}
	if n := host.n.Load(); n != 1 {
		t.Errorf("asked %d times within the ttl, want 1", n)
	}
	host.SetSetting(context.Background(), plugins.SettingHidden, "/c")
	now = now.Add(settingTTL)
	if paths, _ := h.paths(context.Background()); !slices.Equal(paths, []string{"/c"}) {
		t.Errorf("after the ttl: %q, want [/c]", paths)
	}
	now = now.Add(-time.Hour) // a clock set back asks again
	h.paths(context.Background())
	if n := host.n.Load(); n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
}
