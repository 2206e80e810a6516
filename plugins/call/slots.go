package call

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/reso-project/reso/core"
)

// The bounds of one target (SettingWaitCount, SettingWaitBytes) hold for
// all the plugins that share the tree, the nodes of a fleet: a waiting
// message takes a slot in the tree, /callwait/<target>/s<n> with
// {"id", "size"}, a lease of the wait, which its end (delivered,
// withdrawn) deletes and its drop lets run out. A SEND that would wait
// reads the target's slots (a read of the tree sees every write
// acknowledged before it, on any node), refuses past the bounds, and
// takes the lowest free one by its name: of two SENDs that read the same
// slots, the tree lets one create it and the other finds it taken
// ("exists") and reads again. Only the plugin reads and writes
// /callwait (its rule self:cruds, its owner the plugin).

// waitTop is the top-level path of the slots.
const waitTop = "/callwait"

// maxSlotTries bounds how often a SEND reads the slots again after
// another took the one it chose.
const maxSlotTries = 8

// slots keeps the waiting messages' places in the tree.
type slots struct {
	st       store
	wait     time.Duration
	maxCount int
	maxBytes int
}

// slot is the entity of a slot.
type slot struct {
	ID   string `json:"id"`
	Size int    `json:"size"`
}

// take gives m a slot of its target: 503 Too Many Waiting Messages or
// 503 Waiting Messages Too Large past the target's bounds.
func (s *slots) take(ctx context.Context, m *message) error {
	path := waitTop + "/" + m.target
	if err := s.ensure(ctx, path); err != nil {
		return err
	}
	entity, err := json.Marshal(slot{ID: m.id, Size: m.size})
	if err != nil {
		return err
	}
	for range maxSlotTries {
		cs, err := s.st.children(ctx, path)
		if err != nil {
			return err
		}
		used := make(map[string]bool, len(cs))
		size := 0
		for _, c := range cs {
			var sl slot
			if json.Unmarshal(c.Entity, &sl) == nil {
				used[c.ID] = true
				size += sl.Size
			}
		}
		switch {
		case len(used) >= s.maxCount:
			return errTooManyWait
		case size+m.size > s.maxBytes:
			return errWaitTooLarge
		}
		name := ""
		for i := 0; ; i++ {
			if name = "s" + strconv.Itoa(i); !used[name] {
				break
			}
		}
		err = s.st.create(ctx, "", path+"/"+name, entity, s.wait.Seconds(), "", nil)
		if st, ok := core.AsStatus(err); ok && st.Code() == http.StatusConflict {
			continue // taken meanwhile: read again
		}
		if err != nil {
			return err
		}
		m.slot = name
		return nil
	}
	return errTooManyWait
}

// ensure makes the target's node of slots, persistent, when it is not
// there.
func (s *slots) ensure(ctx context.Context, path string) error {
	e, err := s.st.get(ctx, path)
	if err != nil || e != nil {
		return err
	}
	err = s.st.create(ctx, "", path, []byte("{}"), 0, "", nil)
	if st, ok := core.AsStatus(err); ok && st.Code() == http.StatusConflict {
		return nil // made meanwhile
	}
	return err
}

// release frees the slot of m, delivered or withdrawn, unless it ran out
// and another message took it since.
func (s *slots) release(ctx context.Context, m *message) {
	if m.slot == "" {
		return
	}
	path := waitTop + "/" + m.target + "/" + m.slot
	e, err := s.st.record(ctx, path)
	if err != nil || e == nil {
		return
	}
	var sl slot
	if json.Unmarshal(e, &sl) != nil || sl.ID != m.id {
		return
	}
	_, _ = s.st.do(ctx, "", msg{Method: "DELETE", Resource: path})
}
