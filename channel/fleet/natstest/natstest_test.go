package natstest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestSync: the servers of New fsync every message before they acknowledge
// it (sync_interval: always), those of NewSync with SyncDefault do not,
// as each running server's own JetStream configuration says (the
// sync_always of its /jsz and /varz), after a restart too. The server
// hands that setting to every file store it opens: a stream's
// (server/stream.go, fsCfg.SyncAlways) and its Raft log's
// (server/jetstream_cluster.go, createRaftGroup). Their client
// connections have the write deadline and policy of docs/fleet.md §14.
func TestSync(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(dir string) (*Cluster, error)
		want bool
	}{
		{"New", func(dir string) (*Cluster, error) { return New(1, dir) }, true},
		{"NewSync always", func(dir string) (*Cluster, error) { return NewSync(1, dir, SyncAlways) }, true},
		{"NewSync default", func(dir string) (*Cluster, error) { return NewSync(1, dir, SyncDefault) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := c.new(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.StopAll()
			for round := range 2 {
				if round == 1 {
					cl.Stop(0)
					if err := cl.Restart(0); err != nil {
						t.Fatal(err)
					}
				}
				cl.mu.Lock()
				s := cl.servers[0]
				cl.mu.Unlock()
				jsz, err := s.Jsz(nil)
				if err != nil {
					t.Fatal(err)
				}
				varz, err := s.Varz(&server.VarzOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if jsz.Config.SyncAlways != c.want || varz.JetStream.Config == nil || varz.JetStream.Config.SyncAlways != c.want {
					t.Errorf("round %d: /jsz sync_always %v, /varz jetstream config %+v; want sync_always %v", round, jsz.Config.SyncAlways, varz.JetStream.Config, c.want)
				}
				if varz.WriteDeadline != WriteDeadline || varz.WriteTimeout != WriteTimeout {
					t.Errorf("round %d: /varz write_deadline %v, write_timeout %q; want %v, %q", round, varz.WriteDeadline, varz.WriteTimeout, WriteDeadline, WriteTimeout)
				}
			}
		})
	}
}

// TestProcsWriteDeadline: the servers of StartProcs, started from the
// configuration file they write, say the write deadline and policy of
// docs/fleet.md §14 (write_deadline: "30s", write_timeout: retry) in their
// /varz: nats-server reads both lines of the file as meant.
func TestProcsWriteDeadline(t *testing.T) {
	p := StartProcsWith(t, 1, ProcsConfig{Monitor: true})
	resp, err := http.Get(p.MonitorURL(0) + "/varz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var varz struct {
		WriteDeadline time.Duration `json:"write_deadline"`
		WriteTimeout  string        `json:"write_timeout"`
		MaxPending    int64         `json:"max_pending"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&varz); err != nil {
		t.Fatal(err)
	}
	if varz.WriteDeadline != WriteDeadline || varz.WriteTimeout != WriteTimeout || varz.MaxPending != 64<<20 {
		t.Fatalf("/varz write_deadline %v, write_timeout %q, max_pending %d; want %v, %q and the default 64 MiB", varz.WriteDeadline, varz.WriteTimeout, varz.MaxPending, WriteDeadline, WriteTimeout)
	}
}
