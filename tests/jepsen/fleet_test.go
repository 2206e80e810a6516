package jepsen

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// skipShort skips a test that starts processes under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts nats-server and reso processes")
	}
}

// probe is the client of the tests' own requests.
var probe = &http.Client{Timeout: 5 * time.Second}

// readyzOf returns the status of base's /readyz, 0 when it did not
// answer, and the answer.
func readyzOf(base string) (int, string) {
	resp, err := probe.Get(base + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// await polls cond every 100 ms until it holds, at most within; it fails
// t naming what was awaited and the last state cond reported.
func await(t *testing.T, what string, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %s)", what, within, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitReadyz waits until base's /readyz answers want.
func awaitReadyz(t *testing.T, base string, want int, within time.Duration) {
	t.Helper()
	await(t, fmt.Sprintf("%s/readyz %d", base, want), within, func() (bool, string) {
		code, body := readyzOf(base)
		return code == want, fmt.Sprintf("%d %q", code, body)
	})
}

// routez is what a nats-server's /routez says of its routes.
type routez struct {
	NumRoutes int `json:"num_routes"`
	Routes    []struct {
		RemoteName string `json:"remote_name"`
		DidSolicit bool   `json:"did_solicit"`
		Port       int    `json:"port"`
	} `json:"routes"`
}

// routesOf returns server i's /routez.
func routesOf(f *Fleet, i int) (routez, error) {
	var rz routez
	resp, err := probe.Get(f.NATS().MonitorURL(i) + "/routez")
	if err != nil {
		return rz, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&rz)
	return rz, err
}

// peersOf returns the names of the servers server i has routes to.
func peersOf(rz routez) map[string]bool {
	out := map[string]bool{}
	for _, r := range rz.Routes {
		out[r.RemoteName] = true
	}
	return out
}

// TestFleetStarts: a fleet of three nodes starts ready; each node
// answers through its gate; every server syncs each write to disk (its
// /varz); every route between the servers passes through the harness's
// proxies (each server's /routez counts as many routes as its proxies
// carry) and each server has routes to both others.
func TestFleetStarts(t *testing.T) {
	skipShort(t)
	f := StartFleet(t, FleetConfig{})
	if f.Nodes() != 3 {
		t.Fatalf("Nodes() = %d, want 3", f.Nodes())
	}
	for i := range f.Nodes() {
		if code, body := readyzOf(f.URL(i)); code != http.StatusOK {
			t.Errorf("node %d through its gate %s: /readyz %d %q", i, f.URL(i), code, body)
		}
	}
	for i := range natsServers {
		var varz struct {
			JetStream struct {
				Config struct {
					SyncAlways bool `json:"sync_always"`
				} `json:"config"`
			} `json:"jetstream"`
		}
		resp, err := probe.Get(f.NATS().MonitorURL(i) + "/varz")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&varz)
		resp.Body.Close()
		if err != nil || !varz.JetStream.Config.SyncAlways {
			t.Errorf("nats-%d /varz: sync_always %v (%v), want true", i, varz.JetStream.Config.SyncAlways, err)
		}
	}
	awaitRoutes(t, f)
}
