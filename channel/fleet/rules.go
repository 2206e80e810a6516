package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keyRules is the key of the meta bucket that holds the SHA-256 (hex) of
// the channel rules every node of the fleet applies.
const keyRules = "rules"

// Refused is the error of [Open] when this node may not join the fleet as
// it is configured (another format, other channel rules). Its text is the
// one line to print.
type Refused struct{ msg string }

func (e *Refused) Error() string { return e.msg }

// checkRules records the hash of this node's channel rules when the fleet
// has none, or refuses another hash while a node of the fleet runs. When
// no node has beaten within the heartbeat timeout and the recorded hash is
// older than that too (the whole fleet was stopped, and is started again
// with a new file), the new hash replaces it.
func (f *Fleet) checkRules(ctx context.Context, hash string) error {
	return retry(ctx, func(ctx context.Context) error {
		_, err := f.meta.Create(ctx, keyRules, []byte(hash))
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := f.meta.Get(ctx, keyRules)
		if err != nil {
			return err
		}
		had := string(e.Value())
		if had == hash {
			return nil
		}
		refused := permanent{&Refused{fmt.Sprintf("fleet %s runs -channel-rules sha256 %s; this node has %s", f.cfg.Name, had, hash)}}
		if time.Since(e.Created()) <= f.cfg.Heartbeat {
			return refused
		}
		live, err := f.anyBeat(ctx)
		if err != nil {
			return err
		}
		if live {
			return refused
		}
		if _, err := f.meta.Update(ctx, keyRules, []byte(hash), e.Revision()); err != nil {
			return refused // another node starting now changed it first
		}
		f.log.Warn("fleet: no node runs; the channel rules of this node replace the fleet's", "had", had, "now", hash)
		return nil
	})
}

// anyBeat reports whether a node's heartbeat was written within the
// heartbeat timeout.
func (f *Fleet) anyBeat(ctx context.Context) (bool, error) {
	keys, err := f.nodes.ListKeys(ctx)
	if err != nil {
		return false, err
	}
	for k := range keys.Keys() {
		e, err := f.nodes.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if time.Since(e.Created()) <= f.cfg.Heartbeat {
			return true, nil
		}
	}
	return false, nil
}
