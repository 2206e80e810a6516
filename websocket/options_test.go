package websocket

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.ReadLimit != 64<<10 || o.MaxConnections != 10_000 || o.PingInterval != 25*time.Second ||
		o.PongTimeout != 60*time.Second || o.WriteTimeout != 10*time.Second || o.CloseTimeout != 5*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	if o := (Options{PingInterval: time.Minute}).withDefaults(); o.PongTimeout != 2*time.Minute {
		t.Errorf("PongTimeout not kept above PingInterval: %v", o.PongTimeout)
	}
	if o := (Options{PingInterval: -1, PongTimeout: -1}).withDefaults(); o.PingInterval >= 0 || o.PongTimeout >= 0 {
		t.Errorf("negative (off) intervals changed: %+v", o)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"all set", Options{ReadLimit: 1, MaxConnections: 1, PingInterval: time.Second, PongTimeout: 3 * time.Second, Origins: []string{"*.a.test"}}, true},
		{"pings off", Options{PingInterval: -1, PongTimeout: time.Second}, true},
		{"negative read limit", Options{ReadLimit: -1}, false},
		{"negative cap", Options{MaxConnections: -1}, false},
		{"negative write timeout", Options{WriteTimeout: -1}, false},
		{"pong timeout below ping interval", Options{PingInterval: time.Minute, PongTimeout: time.Second}, false},
		{"pong timeout below default ping interval", Options{PongTimeout: time.Second}, false},
		{"bad origin", Options{Origins: []string{"a.test/x"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.o.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestClosePayload(t *testing.T) {
	tests := []struct {
		code     int
		reason   string
		wantCode int
		wantLen  int
	}{
		{core.CloseNormal, "", core.CloseNormal, 2},
		{core.CloseGoingAway, "bye", core.CloseGoingAway, 5},
		{4000, "custom", 4000, 8},
		{core.CloseAbnormal, "", core.CloseNormal, 2}, // 1006 may not be sent
		{websocket.CloseNoStatusReceived, "", core.CloseNormal, 2},
		{99, "", core.CloseInternal, 2},
		{core.CloseNormal, string(make([]byte, 300)), core.CloseNormal, 125},
	}
	for _, tt := range tests {
		p := closePayload(tt.code, tt.reason)
		if got := int(p[0])<<8 | int(p[1]); got != tt.wantCode || len(p) != tt.wantLen {
			t.Errorf("closePayload(%d, %d bytes) = code %d, %d bytes; want %d, %d", tt.code, len(tt.reason), got, len(p), tt.wantCode, tt.wantLen)
		}
	}
}
