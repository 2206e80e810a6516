package channel

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Epocher is an optional capability of a [Store] or a [Log]: the epoch of
// the history it keeps (docs/channel.md#replay-after-a-reconnect), an
// opaque string of 1 to 32 characters from [0-9a-z] that stays the same
// for as long as the seqs it numbers go on (the store's file, the fleet's
// log stream) and changes when that history starts anew. A tree whose
// store and log have none takes [Options].Epoch, or draws a random one
// when it is created. A Store that keeps seqs across restarts should
// have one, or no client resumes after a restart.
type Epocher interface {
	Epoch() string
}

// NewEpoch returns a fresh random epoch: 16 lowercase hex digits.
func NewEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidEpoch reports whether s may be an epoch: 1 to 32 characters from
// [0-9a-z].
func ValidEpoch(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// epochOf returns the epoch of a tree's history: that of its store or
// log when it has one, else fixed (when not ""), else a fresh one.
func epochOf(store Store, log Log, fixed string) (string, error) {
	ep := fixed
	if e, ok := store.(Epocher); ok {
		ep = e.Epoch()
	} else if e, ok := log.(Epocher); ok {
		ep = e.Epoch()
	} else if ep == "" {
		return NewEpoch(), nil
	}
	if !ValidEpoch(ep) {
		return "", fmt.Errorf("channel: invalid epoch %q", ep)
	}
	return ep, nil
}

// Epoch returns the epoch of the tree's history: what every SUBSCRIBE
// reply carries, and what a "since" must come with to be replayed when it
// carries one.
func (t *Tree) Epoch() string { return t.epoch }
