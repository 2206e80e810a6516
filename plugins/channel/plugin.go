package channel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/plugins"
)

// DefaultPrefix is where [Plugin] mounts the doors when its Prefix is "".
const DefaultPrefix = "/channel"

// SettingMaxMessage is the setting (plugins.Settings) of the largest
// message a session client may send, in decimal bytes, set by the host
// from its WebSocket read limit (reso: -channel-read-limit); empty means
// doors.DefaultMaxMessage. It reaches the plugin in its own process too.
const SettingMaxMessage = "channel-max-message"

// Plugin is the doors of the resource tree, mounted as the plugin
// "channel". The zero value is ready, with
// the defaults its fields name.
type Plugin struct {
	// Prefix is the path of the WebSocket door; the HTTP door serves the
	// paths under it (Prefix + "/"). "" means DefaultPrefix.
	Prefix string
	// MaxMessage is the largest message, in bytes, a session client may
	// send; a larger one closes the session with 1009 "message too big".
	// The transport usually refuses such a message before it gets here. 0
	// means the host's SettingMaxMessage, or else doors.DefaultMaxMessage.
	MaxMessage int
}

// New returns the doors with default settings.
func New() *Plugin { return &Plugin{} }

// errNoTree answers Routes when the host offers no tree.
var errNoTree = errors.New("channel: the host offers no tree (plugins.Services.Tree)")

// Routes returns the session route at the prefix (/channel) and the HTTP
// door under it (/channel/), both with an optional identity.
func (p *Plugin) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	tree := host.Tree
	if tree == nil {
		return nil, errNoTree
	}
	maxMessage, err := p.maxMessage(ctx, host)
	if err != nil {
		return nil, err
	}
	prefix := regexp.QuoteMeta(strings.TrimSuffix(cmp.Or(p.Prefix, DefaultPrefix), "/"))
	return []plugins.Route{
		{Match: `GET ` + prefix + `(?:$|\?)`, Identity: plugins.IdentityOptional, Session: &doors.Session{Tree: tree, MaxMessage: maxMessage}},
		{Match: `GET,PUT,POST,DELETE ` + prefix + `/`, Identity: plugins.IdentityOptional, Handler: &doors.Door{Tree: tree}},
	}, nil
}

// maxMessage returns the largest message a session client may send: p's
// own, the host's setting or the default.
func (p *Plugin) maxMessage(ctx context.Context, host plugins.Services) (int, error) {
	if p.MaxMessage > 0 {
		return p.MaxMessage, nil
	}
	s := host.Settings
	if s == nil {
		return doors.DefaultMaxMessage, nil
	}
	v, err := s.Setting(ctx, SettingMaxMessage)
	if err != nil || v == "" {
		return doors.DefaultMaxMessage, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("channel: setting %s: %q is not a positive number", SettingMaxMessage, v)
	}
	return n, nil
}

var _ plugins.Plugin = (*Plugin)(nil)
