package config

import (
	"context"
	"errors"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

func TestPut(t *testing.T) {
	cases := []struct {
		name   string
		entity any
		want   string
		err    error
	}{
		{"text", "docs", "docs", nil},
		{"spaces kept", " a b ", " a b ", nil},
		{"empty", "", ".", ErrInvalidDirectory},
		{"number", int64(3), ".", ErrInvalidDirectory},
		{"list", []any{"a"}, ".", ErrInvalidDirectory},
		{"null", nil, ".", ErrInvalidDirectory},
		{"nul byte", "a\x00b", ".", ErrInvalidDirectory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host := pluginhost.NewSettings(map[string]string{plugins.SettingDirectory: "."})
			rs := &resource{host: host}
			_, err := rs.Put(context.Background(), &core.Request{Entity: c.entity})
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if got, _ := host.Setting(context.Background(), plugins.SettingDirectory); got != c.want {
				t.Errorf("directory %q, want %q", got, c.want)
			}
		})
	}
}

func TestGetDefault(t *testing.T) {
	rs := &resource{host: &pluginhost.SettingsMap{}}
	v, err := rs.Get(context.Background(), &core.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(core.AppendJSON(nil, v)); got != `{"config": {"directory": "."}}` {
		t.Errorf("%s", got)
	}
}
