package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/internal/natsname"
)

// Open joins the fleet cfg names over nc: it creates the log stream and
// the buckets when they are missing (retrying while the JetStream cluster
// elects its leader) and checks the fleet's format. The node gets a fresh
// random id.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Fleet, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if !validName(cfg.Name) {
		return nil, fmt.Errorf("fleet: name %q: use letters, digits, - and _", cfg.Name)
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = DefaultSnapshot
	}
	switch {
	case cfg.SnapshotInterval == 0:
		cfg.SnapshotInterval = DefaultSnapshotInterval
	case cfg.SnapshotInterval < 0:
		cfg.SnapshotInterval = 0
	}
	switch {
	case cfg.Keep == 0:
		cfg.Keep = DefaultKeep
	case cfg.Keep < 0:
		cfg.Keep = 0
	}
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = DefaultMaxLag
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f := &Fleet{
		cfg: cfg, node: newNodeID(), nc: nc, js: js, log: cfg.Logger,
		subject: "reso." + cfg.Name + ".log",
		started: time.Now(),
		swept:   time.Now(),
		snapAt:  time.Now(),
		tallies: make(map[string]*tally),
		seen:    make(map[string]time.Time),
		applied: make(map[string]uint64),
		accused: make(map[string]time.Time),
		differs: make(map[string]bool),
		member:  make(map[string]bool),
		sus:     make(map[string]*suspicion),
		ring:    make(chan struct{}, 1),
		joined:  make(chan struct{}),
		stop:    make(chan struct{}),
		marking: make(chan struct{}, maxMarks),
		lag:     lagClock{grain: cfg.MaxLag / 16},
	}
	f.readMark = []byte(readMagic + f.node + "\n")
	err = retry(ctx, func(ctx context.Context) error {
		f.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        natsname.Of(cfg.Name, "LOG"),
			Subjects:    []string{f.subject},
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			Duplicates:  time.Minute,
			AllowDirect: true,
			Metadata:    map[string]string{"reso-format": strconv.Itoa(Format)},
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the log stream: %w", err)
	}
	err = retry(ctx, func(ctx context.Context) error {
		info, err := f.stream.Info(ctx)
		if err == nil {
			f.epoch, err = streamEpoch(info.Created)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the log stream: %w", err)
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.meta, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: natsname.Of(cfg.Name, "KV"), Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the key-value bucket: %w", err)
	}
	if err := checkFormat(ctx, f.meta, cfg.Name); err != nil {
		return nil, err
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.nodes, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: natsname.Of(cfg.Name, "NODES"), Replicas: cfg.Replicas, Storage: jetstream.MemoryStorage,
			TTL: 10 * cfg.Heartbeat,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the nodes bucket: %w", err)
	}
	if err := f.openMembers(ctx); err != nil {
		return nil, fmt.Errorf("fleet: the members bucket: %w", err)
	}
	if cfg.RulesHash != "" {
		if err := f.checkRules(ctx, cfg.RulesHash); err != nil {
			return nil, err
		}
	}
	err = retry(ctx, func(ctx context.Context) error {
		f.snaps, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: natsname.Of(cfg.Name, "SNAP"), Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: the snapshot store: %w", err)
	}
	f.counts, err = nc.Subscribe(f.countSubject(f.node), f.onCount)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f.out.wake = make(chan struct{}, 1)
	f.out.maxLen = 1 << 20 // NATS's default max_payload
	if mp := nc.MaxPayload(); mp > 0 {
		f.out.maxLen = int(mp)
	}
	f.out.maxLen -= headerRoom
	f.life, f.cancelLife = context.WithCancel(context.Background())
	f.done.Add(1)
	go f.send()
	return f, nil
}

// validName reports whether name may name a fleet (it goes into subjects
// and stream names).
func validName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return name != "" && len(name) <= 64
}

// checkFormat records the fleet's format, or refuses another one.
func checkFormat(ctx context.Context, meta jetstream.KeyValue, name string) error {
	want := strconv.Itoa(Format)
	return retry(ctx, func(ctx context.Context) error {
		_, err := meta.Create(ctx, "format", []byte(want))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := meta.Get(ctx, "format")
		if err != nil {
			return err
		}
		if got := string(e.Value()); got != want {
			return permanent{&Refused{fmt.Sprintf("fleet %s has format %s; this reso reads format %s", name, got, want)}}
		}
		return nil
	})
}

// permanent is an error retry gives up on at once.
type permanent struct{ error }

// retry runs op with a short time limit per attempt until it succeeds,
// fails permanently or ctx ends: a JetStream cluster that has not elected
// its leader yet leaves requests unanswered.
func retry(ctx context.Context, op func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		var p permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &p):
			return p.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// newNodeID returns 16 random hex digits.
func newNodeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// streamEpoch returns the epoch of a log stream created at created: its
// creation time as JetStream keeps it (fixed when the stream is created,
// the same on every server of the cluster and across their restarts), in
// lowercase hex nanoseconds since 1970.
func streamEpoch(created time.Time) (string, error) {
	if created.IsZero() || created.UnixNano() <= 0 {
		return "", permanent{fmt.Errorf("creation time %v: no epoch", created)}
	}
	return strconv.FormatUint(uint64(created.UnixNano()), 16), nil
}
