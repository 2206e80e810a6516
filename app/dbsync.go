package app

import (
	"errors"
	"flag"

	chstore "github.com/reso-project/reso/channel/sqlitestore"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
)

// dbSync is the flag -db-sync: SQLite's synchronous setting of the -db
// file's writing connections (the channel's resources and the login
// records), which decides what a power loss may take back.
type dbSync string

const (
	dbSyncNormal dbSync = "normal" // synchronous=NORMAL: a commit survives a crash of reso, not always a power loss (the default)
	dbSyncFull   dbSync = "full"   // synchronous=FULL: every commit waits for fsync of the write-ahead log, and survives a power loss
)

func (s *dbSync) String() string {
	if s == nil || *s == "" {
		return string(dbSyncNormal)
	}
	return string(*s)
}

func (s *dbSync) Set(v string) error {
	switch dbSync(v) {
	case dbSyncNormal, dbSyncFull:
		*s = dbSync(v)
		return nil
	}
	return errors.New("want normal or full")
}

// dbSyncFlag declares -db-sync on fs, filling s.
func dbSyncFlag(fs *flag.FlagSet, s *dbSync) {
	*s = dbSyncNormal
	fs.Var(s, "db-sync", "SQLite's synchronous setting of the -db file: normal (a commit survives a crash of reso; the last ones before a power loss may roll back) or full (every commit waits for the disk, and survives a power loss; slower writes)")
}

// channel is the setting for the channel's store.
func (s dbSync) channel() chstore.Sync {
	if s == dbSyncFull {
		return chstore.SyncFull
	}
	return chstore.SyncNormal
}

// logins is the setting for the login records' store.
func (s dbSync) logins() sqlitestore.Sync {
	if s == dbSyncFull {
		return sqlitestore.SyncFull
	}
	return sqlitestore.SyncNormal
}

var _ flag.Value = (*dbSync)(nil)
