package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reso-project/reso/middleware/auth"
)

// List implements [auth.Lister]: the records of realm ordered by id.
func (s *Store) List(ctx context.Context, realm string) ([]auth.LoginRecord, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT id, email, realm, hash, token FROM logins WHERE realm = ? ORDER BY id", realm)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list login records: %w", err)
	}
	defer rows.Close()
	var out []auth.LoginRecord
	for rows.Next() {
		var rec auth.LoginRecord
		if err := rows.Scan(&rec.ID, &rec.Email, &rec.Realm, &rec.Hash, &rec.Token); err != nil {
			return nil, fmt.Errorf("sqlitestore: list login records: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list login records: %w", err)
	}
	return out, nil
}

// Remove implements [auth.Remover].
func (s *Store) Remove(ctx context.Context, email, realm string) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "DELETE FROM logins WHERE email = ? AND realm = ? RETURNING id", email, realm).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return auth.ErrNoRecord
		}
		if err != nil {
			return fmt.Errorf("sqlitestore: remove %q: %w", email, err)
		}
		return nil
	})
	return id, err
}

var (
	_ auth.Lister  = (*Store)(nil)
	_ auth.Remover = (*Store)(nil)
)
