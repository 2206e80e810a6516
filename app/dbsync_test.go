package app

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	chstore "github.com/reso-project/reso/channel/sqlitestore"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
)

// TestDBSyncFlag: -db-sync takes normal (the default) or full, and its
// value reaches the channel's store: the store reso opens on -db runs
// with synchronous NORMAL (1) or FULL (2). Another value is a usage error.
func TestDBSyncFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args    []string
		want    dbSync
		channel chstore.Sync
		logins  sqlitestore.Sync
	}{
		{nil, dbSyncNormal, chstore.SyncNormal, sqlitestore.SyncNormal},
		{[]string{"-db-sync", "normal"}, dbSyncNormal, chstore.SyncNormal, sqlitestore.SyncNormal},
		{[]string{"-db-sync", "full"}, dbSyncFull, chstore.SyncFull, sqlitestore.SyncFull},
	} {
		cfg, err := parseFlags(append([]string{"-directory", dir}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.dbSync != c.want || cfg.dbSync.channel() != c.channel || cfg.dbSync.logins() != c.logins {
			t.Errorf("%q: -db-sync %q (channel %v, logins %v); want %q", c.args, cfg.dbSync, cfg.dbSync.channel(), cfg.dbSync.logins(), c.want)
		}
		cfg.db = filepath.Join(t.TempDir(), "reso.db")
		st, err := openChannelStore(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Synchronous(context.Background())
		st.Close()
		if err != nil || got != c.channel {
			t.Errorf("%q: the channel's store runs with synchronous %v (%v); want %v", c.args, got, err, c.channel)
		}
	}
	for _, bad := range []string{"FULL", "extra", "off", ""} {
		_, err := parseFlags([]string{"-directory", dir, "-db-sync", bad}, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) || err.Error() != `invalid value "`+bad+`" for flag -db-sync: want normal or full` {
			t.Errorf("-db-sync %q: %v; want a usage error saying: want normal or full", bad, err)
		}
	}
}
