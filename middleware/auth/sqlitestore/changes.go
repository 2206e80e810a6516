package sqlitestore

import (
	"context"
	"fmt"

	"github.com/reso-project/reso/middleware/auth"
)

// changesSchema is the log of the changes that end sessions: triggers on
// logins write it, so every writer of the file (a server, reso user in
// another process) logs its changes without knowing of the log. It keeps
// the last maxChanges entries.
const changesSchema = `CREATE TABLE IF NOT EXISTS login_changes (
	seq   INTEGER PRIMARY KEY AUTOINCREMENT,
	id    INTEGER NOT NULL,
	email TEXT NOT NULL,
	realm TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS login_removed AFTER DELETE ON logins BEGIN
	INSERT INTO login_changes (id, email, realm) VALUES (OLD.id, OLD.email, OLD.realm);
	DELETE FROM login_changes WHERE seq <= (SELECT max(seq) FROM login_changes) - 1000;
END;
CREATE TRIGGER IF NOT EXISTS login_rehashed AFTER UPDATE OF hash ON logins WHEN OLD.hash <> NEW.hash BEGIN
	INSERT INTO login_changes (id, email, realm) VALUES (OLD.id, OLD.email, OLD.realm);
	DELETE FROM login_changes WHERE seq <= (SELECT max(seq) FROM login_changes) - 1000;
END`

// maxChanges bounds what one call of Changes returns.
const maxChanges = 1000

// LastChange implements [auth.Changer].
func (s *Store) LastChange(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.r.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM login_changes").Scan(&seq); err != nil {
		return 0, fmt.Errorf("sqlitestore: last change: %w", err)
	}
	return seq, nil
}

// Changes implements [auth.Changer].
func (s *Store) Changes(ctx context.Context, after int64) ([]auth.Change, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT seq, id, email, realm FROM login_changes WHERE seq > ? ORDER BY seq LIMIT ?", after, maxChanges)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: changes: %w", err)
	}
	defer rows.Close()
	var out []auth.Change
	for rows.Next() {
		var c auth.Change
		if err := rows.Scan(&c.Seq, &c.ID, &c.Email, &c.Realm); err != nil {
			return nil, fmt.Errorf("sqlitestore: changes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: changes: %w", err)
	}
	return out, nil
}

var _ auth.Changer = (*Store)(nil)
