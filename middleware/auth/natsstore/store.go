// Package natsstore keeps the login records of package auth, and the
// instance secret, in a NATS JetStream key-value bucket, so that every
// node of a fleet (docs/fleet.md) sees the same logins. It is the
// JetStream counterpart of package sqlitestore, behind the same
// [auth.Store] interface.
package natsstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/internal/natsname"
	"github.com/reso-project/reso/middleware/auth"
)

// Keys of the bucket: one record per id, an index from (realm, email) to
// the id, the last id handed out, the instance secret, and per id the
// last end of the record's sessions (a new password or its removal: its
// e-mail and realm), which the nodes watch (Notify).
const (
	recPrefix  = "rec."
	keyNext    = "next"
	keySecret  = "secret"
	mailPrefix = "email."
	endPrefix  = "end."
)

// attempt bounds one request to JetStream while Open waits for the
// cluster's leader.
const attempt = 2 * time.Second

// Store is an [auth.Store] (and [auth.Lister], [auth.Remover]) in a
// JetStream key-value bucket. Writes that read first (a token cleared
// only when it is the one given, a new id) use compare-and-set on the
// key's revision, so several nodes may write at once.
//
// Reads ask the bucket's stream leader, not any replica (JetStream's
// direct get, which a lagging replica may answer), so that a read sees
// every write acknowledged before it, by any node.
type Store struct {
	nc     *nats.Conn
	kv     jetstream.KeyValue
	stream string // the bucket's stream, KV_<bucket>
	prefix string // the subject prefix of its keys, $KV.<bucket>.
}

// Open opens (creating it when missing) the login bucket of the fleet
// named fleet over nc, its keys replicated replicas times. It retries
// while the JetStream cluster elects its leaders (of the cluster, then of
// the new bucket), until ctx ends, so that the store answers once it is
// returned.
func Open(ctx context.Context, nc *nats.Conn, fleet string, replicas int) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, storeErr(err)
	}
	if replicas <= 0 {
		replicas = 3
	}
	bucket := natsname.Of(fleet, "LOGINS")
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		kv, err := js.CreateOrUpdateKeyValue(actx, jetstream.KeyValueConfig{
			Bucket: bucket, Replicas: replicas, Storage: jetstream.FileStorage,
		})
		if err == nil {
			_, err = kv.Get(actx, keyNext) // answers once the bucket has a leader
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				err = nil
			}
		}
		cancel()
		if err == nil {
			return &Store{nc: nc, kv: kv, stream: "KV_" + bucket, prefix: "$KV." + bucket + "."}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("natsstore: bucket %s: %w", bucket, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// record is a login record as the bucket holds it.
type record struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Realm string `json:"realm"`
	Hash  string `json:"hash"`
	Token string `json:"token,omitempty"`
}

func (r record) auth() auth.LoginRecord {
	return auth.LoginRecord{ID: r.ID, Email: r.Email, Realm: r.Realm, Hash: r.Hash, Token: r.Token}
}

// recKey and mailKey name the keys of a record and of its index entry
// (e-mail addresses hold characters keys may not).
func recKey(id int64) string { return recPrefix + strconv.FormatInt(id, 10) }

func mailKey(email, realm string) string {
	return mailPrefix + hex.EncodeToString([]byte(realm)) + "." + hex.EncodeToString([]byte(email))
}

// get reads the record of id and the revision of its key.
func (s *Store) get(ctx context.Context, id int64) (record, uint64, error) {
	v, rev, err := s.last(ctx, recKey(id))
	if err != nil {
		return record{}, 0, err
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return record{}, 0, fmt.Errorf("natsstore: record %d: %w", id, err)
	}
	return r, rev, nil
}

// idOf returns the id indexed for email in realm.
func (s *Store) idOf(ctx context.Context, email, realm string) (int64, error) {
	v, _, err := s.last(ctx, mailKey(email, realm))
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("natsstore: index of %q: %w", email, err)
	}
	return id, nil
}

// change applies edit to the record of id with compare-and-set, reading
// again after a concurrent change. edit reports whether to write.
func (s *Store) change(ctx context.Context, id int64, edit func(*record) bool) (bool, error) {
	for {
		r, rev, err := s.get(ctx, id)
		if err != nil {
			return false, err
		}
		if !edit(&r) {
			return false, nil
		}
		v, _ := json.Marshal(r)
		_, err = s.kv.Update(ctx, recKey(id), v, rev)
		if err == nil {
			return true, nil
		}
		if !conflict(err) {
			return false, storeErr(err)
		}
	}
}

// conflict reports whether err is a failed compare-and-set.
func conflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return true
		}
	}
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// nextID hands out a new id: the counter key, incremented with
// compare-and-set.
func (s *Store) nextID(ctx context.Context) (int64, error) {
	for {
		v, rev, err := s.last(ctx, keyNext)
		switch {
		case errors.Is(err, auth.ErrNoRecord):
			if _, err := s.kv.Create(ctx, keyNext, []byte("1")); err == nil {
				return 1, nil
			} else if !conflict(err) {
				return 0, storeErr(err)
			}
			continue
		case err != nil:
			return 0, err
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("natsstore: id counter %q", v)
		}
		if _, err := s.kv.Update(ctx, keyNext, []byte(strconv.FormatInt(n+1, 10)), rev); err == nil {
			return n + 1, nil
		} else if !conflict(err) {
			return 0, storeErr(err)
		}
	}
}

// Register implements [auth.Store].
func (s *Store) Register(ctx context.Context, email, realm, hash string) (int64, error) {
	for {
		id, err := s.idOf(ctx, email, realm)
		if err == nil {
			var old string
			_, err = s.change(ctx, id, func(r *record) bool {
				if old = r.Hash; old != hash {
					// A new password: the old sessions end with this write.
					r.Hash, r.Token = hash, ""
				}
				return true
			})
			if errors.Is(err, auth.ErrNoRecord) {
				continue // removed meanwhile
			}
			if err == nil && old != hash {
				err = s.ended(ctx, id, email, realm)
			}
			return id, err
		}
		if !errors.Is(err, auth.ErrNoRecord) {
			return 0, err
		}
		if id, err = s.nextID(ctx); err != nil {
			return 0, err
		}
		v, _ := json.Marshal(record{ID: id, Email: email, Realm: realm, Hash: hash})
		if _, err := s.kv.Create(ctx, recKey(id), v); err != nil {
			return 0, storeErr(err)
		}
		if _, err := s.kv.Create(ctx, mailKey(email, realm), []byte(strconv.FormatInt(id, 10))); err != nil {
			_ = s.kv.Delete(ctx, recKey(id))
			if conflict(err) {
				continue // registered by another node meanwhile: update that one
			}
			return 0, storeErr(err)
		}
		return id, nil
	}
}

// ByID implements [auth.Store].
func (s *Store) ByID(ctx context.Context, id int64) (auth.LoginRecord, error) {
	r, _, err := s.get(ctx, id)
	return r.auth(), err
}

// ByEmail implements [auth.Store].
func (s *Store) ByEmail(ctx context.Context, email, realm string) (auth.LoginRecord, error) {
	id, err := s.idOf(ctx, email, realm)
	if err != nil {
		return auth.LoginRecord{}, err
	}
	r, _, err := s.get(ctx, id)
	if err == nil && (r.Email != email || r.Realm != realm) {
		err = auth.ErrNoRecord
	}
	return r.auth(), err
}

// SetToken implements [auth.Store].
func (s *Store) SetToken(ctx context.Context, id int64, token string) error {
	_, err := s.change(ctx, id, func(r *record) bool { r.Token = token; return true })
	return err
}

// SetTokenIfHash implements [auth.TokenGuard].
func (s *Store) SetTokenIfHash(ctx context.Context, id int64, hash, token string) (bool, error) {
	return s.change(ctx, id, func(r *record) bool {
		if r.Hash != hash {
			return false
		}
		r.Token = token
		return true
	})
}

// ClearToken implements [auth.Store].
func (s *Store) ClearToken(ctx context.Context, id int64, token string) (bool, error) {
	if token == "" {
		return false, nil
	}
	ok, err := s.change(ctx, id, func(r *record) bool {
		if r.Token != token {
			return false
		}
		r.Token = ""
		return true
	})
	if errors.Is(err, auth.ErrNoRecord) {
		return false, nil
	}
	return ok, err
}

// List implements [auth.Lister].
func (s *Store) List(ctx context.Context, realm string) ([]auth.LoginRecord, error) {
	keys, err := s.kv.ListKeysFiltered(ctx, recPrefix+">")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(err)
	}
	var rs []auth.LoginRecord
	for k := range keys.Keys() {
		id, err := strconv.ParseInt(strings.TrimPrefix(k, recPrefix), 10, 64)
		if err != nil {
			continue
		}
		r, _, err := s.get(ctx, id)
		if errors.Is(err, auth.ErrNoRecord) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.Realm == realm {
			rs = append(rs, r.auth())
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	return rs, nil
}

// Remove implements [auth.Remover].
func (s *Store) Remove(ctx context.Context, email, realm string) (int64, error) {
	id, err := s.idOf(ctx, email, realm)
	if err != nil {
		return 0, err
	}
	if err := s.kv.Delete(ctx, recKey(id)); err != nil {
		return 0, storeErr(err)
	}
	if err := s.kv.Delete(ctx, mailKey(email, realm)); err != nil {
		return 0, storeErr(err)
	}
	return id, s.ended(ctx, id, email, realm)
}

// Close implements [auth.Store]; the NATS connection stays open.
func (s *Store) Close() error { return nil }

var (
	_ auth.Store      = (*Store)(nil)
	_ auth.Lister     = (*Store)(nil)
	_ auth.Remover    = (*Store)(nil)
	_ auth.Notifier   = (*Store)(nil)
	_ auth.TokenGuard = (*Store)(nil)
)
