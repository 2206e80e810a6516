package natsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/middleware/auth"
)

// Reads from the bucket's stream leader (Store.last): what every read of
// the store goes through, so that it sees every acknowledged write.

// msgGet is the answer of the stream leader to $JS.API.STREAM.MSG.GET.
type msgGet struct {
	Message *struct {
		Seq    uint64 `json:"seq"`
		Header []byte `json:"hdrs"`
		Data   []byte `json:"data"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// readTimeout bounds a read whose context has no deadline of its own.
const readTimeout = 5 * time.Second

// errNoMessage is the JetStream error code of a message get that found
// nothing.
const errNoMessage = 10037

// last reads the value and revision of key from the stream leader;
// auth.ErrNoRecord when the key is missing or deleted.
func (s *Store) last(ctx context.Context, key string) ([]byte, uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readTimeout)
		defer cancel()
	}
	req, _ := json.Marshal(map[string]string{"last_by_subj": s.prefix + key})
	m, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+s.stream, req)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	var a msgGet
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return nil, 0, fmt.Errorf("natsstore: reading %s: %w", key, err)
	}
	switch {
	case a.Error != nil && a.Error.ErrCode == errNoMessage:
		return nil, 0, auth.ErrNoRecord
	case a.Error != nil:
		return nil, 0, fmt.Errorf("natsstore: reading %s: %s (%d)", key, a.Error.Description, a.Error.ErrCode)
	case a.Message == nil:
		return nil, 0, fmt.Errorf("natsstore: reading %s: an empty answer", key)
	}
	if len(a.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(a.Message.Header)
		if err != nil {
			return nil, 0, fmt.Errorf("natsstore: reading %s: %w", key, err)
		}
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, 0, auth.ErrNoRecord
		}
	}
	return a.Message.Data, a.Message.Seq, nil
}
