package auth

import "sync"

// DefaultMaxCached is the number of login records an [Authenticator] keeps
// in memory when [Config].MaxCached is 0.
const DefaultMaxCached = 1 << 16

// cache keeps the login records an authenticator has read or written, so
// that a cookie session or a Basic login costs no database query. Every
// write goes to the store first and then here (write-through), under the
// authenticator's write lock, so the cache never lags the store for changes
// made by this process. Changes made by other processes reach it through
// [Authenticator.Watch], and a cached copy that refuses credentials is read
// again from the store before they are refused (see byID).
//
// A read that missed the cache fills it only when no write happened in the
// meantime (gen is unchanged): otherwise it might put back a record older
// than the write.
type cache struct {
	mu      sync.RWMutex
	gen     uint64
	realm   string
	max     int
	byID    map[int64]LoginRecord
	byEmail map[string]int64 // e-mail to id, for records of realm
}

func newCache(realm string, max int) *cache {
	return &cache{realm: realm, max: max, byID: make(map[int64]LoginRecord), byEmail: make(map[string]int64)}
}

// id returns the cached record with the given id.
func (c *cache) id(id int64) (LoginRecord, bool) {
	c.mu.RLock()
	rec, ok := c.byID[id]
	c.mu.RUnlock()
	return rec, ok
}

// email returns the cached record of email in the cache's realm.
func (c *cache) email(email string) (LoginRecord, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.byEmail[email]
	if !ok {
		return LoginRecord{}, false
	}
	rec, ok := c.byID[id]
	return rec, ok
}

// generation returns the write count, to be passed to fill.
func (c *cache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// fill caches rec, read from the store after generation returned gen, unless
// a write happened since.
func (c *cache) fill(gen uint64, rec LoginRecord) {
	c.mu.Lock()
	if c.gen == gen {
		c.insert(rec)
	}
	c.mu.Unlock()
}

// put caches rec after it was written to the store.
func (c *cache) put(rec LoginRecord) {
	c.mu.Lock()
	c.gen++
	c.insert(rec)
	c.mu.Unlock()
}

// setToken records the new token of rec after it was written to the store;
// the other fields of a cached record stay as they are, since a concurrent
// registration may have changed them after rec was read. A record no longer
// cached is not put back: it was forgotten because it changed (in another
// process too), and rec may be older than that change.
func (c *cache) setToken(rec LoginRecord) {
	c.mu.Lock()
	c.gen++
	if cur, ok := c.byID[rec.ID]; ok {
		cur.Token = rec.Token
		c.byID[rec.ID] = cur
	}
	c.mu.Unlock()
}

// update applies fn to the cached record id, if any, after a write to the
// store.
func (c *cache) update(id int64, fn func(*LoginRecord)) {
	c.mu.Lock()
	c.gen++
	if rec, ok := c.byID[id]; ok {
		fn(&rec)
		c.byID[id] = rec
	}
	c.mu.Unlock()
}

// drop forgets record id after a failed write left its state unknown.
func (c *cache) drop(id int64) {
	c.mu.Lock()
	c.gen++
	if rec, ok := c.byID[id]; ok {
		c.remove(id, rec)
	}
	c.mu.Unlock()
}

// keepIf forgets record id unless keep accepts its cached copy, after a
// write to the store by any process. Either way a read under way may have
// read the store before that write, so it fills nothing.
func (c *cache) keepIf(id int64, keep func(LoginRecord) bool) {
	c.mu.Lock()
	c.gen++
	if rec, ok := c.byID[id]; ok && !keep(rec) {
		c.remove(id, rec)
	}
	c.mu.Unlock()
}

// clear forgets every record.
func (c *cache) clear() {
	c.mu.Lock()
	c.gen++
	clear(c.byID)
	clear(c.byEmail)
	c.mu.Unlock()
}

// insert adds or replaces rec; c.mu is held.
func (c *cache) insert(rec LoginRecord) {
	if old, ok := c.byID[rec.ID]; ok {
		if old.Email != rec.Email || old.Realm != rec.Realm {
			c.remove(old.ID, old)
		}
	} else if len(c.byID) >= c.max {
		for id, old := range c.byID { // evict one arbitrary record
			c.remove(id, old)
			break
		}
	}
	c.byID[rec.ID] = rec
	if rec.Realm == c.realm {
		c.byEmail[rec.Email] = rec.ID
	}
}

func (c *cache) remove(id int64, rec LoginRecord) {
	delete(c.byID, id)
	if c.byEmail[rec.Email] == id {
		delete(c.byEmail, rec.Email)
	}
}
