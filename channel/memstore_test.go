package channel

import (
	"context"
	"errors"
	"sync"
)

// memStore is a Store in memory, for tests: it counts its Saves.
type memStore struct {
	mu      sync.Mutex
	recs    map[string]Record
	lastSeq uint64
	saves   int
	fail    bool
}

func newMemStore() *memStore { return &memStore{recs: make(map[string]Record)} }

func (s *memStore) Load(ctx context.Context) ([]Record, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []Record
	for _, r := range s.recs {
		rs = append(rs, r)
	}
	return rs, s.lastSeq, nil
}

func (s *memStore) Save(ctx context.Context, lastSeq uint64, puts []Record, deletes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("memstore: failing")
	}
	s.saves++
	for _, r := range puts {
		r.Entity = append([]byte(nil), r.Entity...)
		if len(r.Entity) == 0 {
			r.Entity = nil
		}
		s.recs[r.Path] = r
	}
	for _, p := range deletes {
		delete(s.recs, p)
	}
	s.lastSeq = lastSeq
	return nil
}

var _ Store = (*memStore)(nil)
