package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/middleware/auth"
)

// The ends of a user's sessions, and the watch that brings every node the
// changes of the login records.

// end is the value of an end key.
type end struct {
	Email string `json:"email"`
	Realm string `json:"realm"`
}

// ended records that the sessions of record id ended (a new password, or
// its removal), for the nodes that follow the bucket (Notify).
func (s *Store) ended(ctx context.Context, id int64, email, realm string) error {
	v, _ := json.Marshal(end{Email: email, Realm: realm})
	if _, err := s.kv.Put(ctx, endPrefix+strconv.FormatInt(id, 10), v); err != nil {
		return storeErr(err)
	}
	return nil
}

// Notify implements [auth.Notifier]: it watches the bucket's records and
// end keys, as any node or reso user writes them, from the moment it is
// called until ctx ends or the watch does.
func (s *Store) Notify(ctx context.Context, f func(auth.Change)) error {
	w, err := s.kv.WatchFiltered(ctx, []string{recPrefix + ">", endPrefix + ">"}, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("natsstore: watch: %w", err)
	}
	defer w.Stop()
	f(auth.Change{All: true})
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("natsstore: the watch ended")
			}
			if e == nil {
				continue
			}
			if c, ok := changeOf(e); ok {
				f(c)
			}
		}
	}
}

// changeOf returns the change of the login records an entry of the bucket
// reports: a record written (Written), a record deleted, or the end of a
// record's sessions.
func changeOf(e jetstream.KeyValueEntry) (auth.Change, bool) {
	k := e.Key()
	prefix := recPrefix
	if strings.HasPrefix(k, endPrefix) {
		prefix = endPrefix
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(k, prefix), 10, 64)
	if err != nil || !strings.HasPrefix(k, prefix) {
		return auth.Change{}, false
	}
	c := auth.Change{Seq: int64(e.Revision()), ID: id}
	switch {
	case e.Operation() != jetstream.KeyValuePut:
		// A deleted record is forgotten; its end key tells whose it was.
		return c, prefix == recPrefix
	case prefix == endPrefix:
		var v end
		if json.Unmarshal(e.Value(), &v) != nil {
			return c, true
		}
		c.Email, c.Realm = v.Email, v.Realm
		return c, true
	}
	var r record
	if json.Unmarshal(e.Value(), &r) != nil {
		return c, true // forgotten
	}
	c.Email, c.Realm, c.Written, c.Hash, c.Token = r.Email, r.Realm, true, r.Hash, r.Token
	return c, true
}
