package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// List implements [Lister]: the records of realm ordered by id.
func (s *SQLiteStore) List(ctx context.Context, realm string) ([]Record, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT id, email, realm, hash, token FROM logins WHERE realm = ? ORDER BY id", realm)
	if err != nil {
		return nil, fmt.Errorf("auth: list login records: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var rec Record
		if err := rows.Scan(&rec.ID, &rec.Email, &rec.Realm, &rec.Hash, &rec.Token); err != nil {
			return nil, fmt.Errorf("auth: list login records: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("auth: list login records: %w", err)
	}
	return out, nil
}

// Remove implements [Remover].
func (s *SQLiteStore) Remove(ctx context.Context, email, realm string) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "DELETE FROM logins WHERE email = ? AND realm = ? RETURNING id", email, realm).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoRecord
		}
		if err != nil {
			return fmt.Errorf("auth: remove %q: %w", email, err)
		}
		return nil
	})
	return id, err
}

var (
	_ Lister  = (*SQLiteStore)(nil)
	_ Remover = (*SQLiteStore)(nil)
)
