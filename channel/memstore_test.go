package channel

import (
	"context"
	"errors"
	"sync"
)

// memStore is a Store in memory, for tests: it counts its Saves, fails
// them while fail is set, and holds them while gate is set (see hold).
type memStore struct {
	mu      sync.Mutex
	recs    map[string]StoredResource
	lastSeq uint64
	saves   int
	fail    bool
	gate    chan struct{} // a Save waits until it is closed
	entered chan struct{} // a Save held sends here
}

// hold makes every Save wait until release is called; entered receives
// one value per Save that started waiting.
func (s *memStore) hold() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.entered = make(chan struct{}), make(chan struct{}, 100)
	gate := s.gate
	return s.entered, func() { close(gate) }
}

// setFail makes Saves fail, or succeed again.
func (s *memStore) setFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

func newMemStore() *memStore { return &memStore{recs: make(map[string]StoredResource)} }

func (s *memStore) Load(ctx context.Context) ([]StoredResource, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []StoredResource
	for _, r := range s.recs {
		rs = append(rs, r)
	}
	return rs, s.lastSeq, nil
}

func (s *memStore) Save(ctx context.Context, lastSeq uint64, puts []StoredResource, deletes []string) error {
	s.mu.Lock()
	gate, entered := s.gate, s.entered
	s.mu.Unlock()
	if gate != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
	}
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
