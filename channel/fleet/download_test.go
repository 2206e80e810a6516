package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// downloadChunks: a snapshot object of many chunks comes back whole
// through the pull consumer of download, its size and digest checked; an
// empty one is empty; a missing one fails at once, not after snapIdle.
func downloadChunks(t *testing.T, cl *natstest.Cluster) {
	n := fleet(t, cl, 1, Config{Heartbeat: time.Minute})[0]
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// Larger than pullBytes: more than one window of requests.
	data := make([]byte, 2*n.f.pullBytes()+12345)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"big", data}, {"empty", nil}} {
		info, err := n.f.snaps.Put(ctx, jetstream.ObjectMeta{Name: c.name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: 64 << 10}}, bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		// Awaited: the server asked has the object (a direct get may
		// ask a replica behind the leader).
		start := time.Now()
		got, err := n.f.download(ctx, c.name)
		for errors.Is(err, jetstream.ErrObjectNotFound) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			got, err = n.f.download(ctx, c.name)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %d bytes in %d chunks downloaded in %s", c.name, len(got), info.Chunks, time.Since(start))
		if !bytes.Equal(got, c.data) {
			t.Fatalf("%s: %d bytes downloaded, want the %d put (%d chunks)", c.name, len(got), len(c.data), info.Chunks)
		}
	}
	_, err := n.f.download(ctx, "missing")
	if !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("missing: %v, want ErrObjectNotFound", err)
	}
}

// largeBatches: messages of the log near NATS's max_payload (one batch of
// one large entry each) are applied by every node: the consumer's pull
// window (pullBytes) takes the largest message.
func largeBatches(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{Heartbeat: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	w := connect(t, ns[0], "")
	// max_payload is 1 MB: an entity of 600 KB, twice (in the entry and
	// its notification's form), fits one message.
	big := strings.Repeat("x", 300<<10)
	for i := range 3 {
		// A PUT answered unavailable (its batch not acknowledged or not
		// applied in time: right after a fleet starts, or on a loaded
		// machine) may have been stored or not: it is put again.
		for {
			r := w.do(fmt.Sprintf(`{"method":"PUT","resource":"/large/x%d","entity":{"s":%q},"persistent":true}`, i, big))
			if code(r) == "success" {
				break
			}
			if code(r) != "failed: unavailable" || ctx.Err() != nil {
				t.Fatalf("PUT of %d bytes: %v", len(big), code(r))
			}
		}
	}
	applied, _ := ns[0].f.Position()
	if err := ns[1].tree.WaitApplied(ctx, applied); err != nil {
		t.Fatalf("the other node applied %d of %d: %v", ns[1].tree.Applied(), applied, err)
	}
	r := connect(t, ns[1], "").do(`{"method":"GET","resource":"/large/x2"}`)
	if e, _ := r["entity"].(map[string]any); e == nil || e["s"] != big {
		t.Fatalf("GET on the other node: %v", code(r))
	}
}
