package auth

import (
	"context"
	"sync"
)

// memStore is a [Store] in memory for the tests of this package (the
// SQLite store lives in package sqlitestore, which imports this one). It
// behaves as the SQLite store does: ids from 1, Register updates the hash
// of an existing record (a new one empties its token), ErrNoRecord for a
// missing one, and it is a [TokenGuard].
type memStore struct {
	mu   sync.Mutex
	next int64
	recs map[int64]LoginRecord
}

func newMemStore() *memStore { return &memStore{recs: map[int64]LoginRecord{}} }

func (s *memStore) Register(_ context.Context, email, realm, hash string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, rec := range s.recs {
		if rec.Email == email && rec.Realm == realm {
			if rec.Hash != hash {
				rec.Hash, rec.Token = hash, ""
			}
			s.recs[id] = rec
			return id, nil
		}
	}
	s.next++
	s.recs[s.next] = LoginRecord{ID: s.next, Email: email, Realm: realm, Hash: hash}
	return s.next, nil
}

func (s *memStore) ByID(ctx context.Context, id int64) (LoginRecord, error) {
	if err := ctx.Err(); err != nil {
		return LoginRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok {
		return LoginRecord{}, ErrNoRecord
	}
	return rec, nil
}

func (s *memStore) ByEmail(ctx context.Context, email, realm string) (LoginRecord, error) {
	if err := ctx.Err(); err != nil {
		return LoginRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.recs {
		if rec.Email == email && rec.Realm == realm {
			return rec, nil
		}
	}
	return LoginRecord{}, ErrNoRecord
}

func (s *memStore) SetToken(_ context.Context, id int64, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok {
		return ErrNoRecord
	}
	rec.Token = token
	s.recs[id] = rec
	return nil
}

func (s *memStore) SetTokenIfHash(_ context.Context, id int64, hash, token string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok {
		return false, ErrNoRecord
	}
	if rec.Hash != hash {
		return false, nil
	}
	rec.Token = token
	s.recs[id] = rec
	return true, nil
}

func (s *memStore) ClearToken(_ context.Context, id int64, token string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[id]
	if !ok || token == "" || rec.Token != token {
		return false, nil
	}
	rec.Token = ""
	s.recs[id] = rec
	return true, nil
}

func (s *memStore) Close() error { return nil }

var _ Store = (*memStore)(nil)
