package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/middleware/auth"
)

// Secret returns the fleet's instance secret, created by the first node
// that asks (a node that loses the race to create it reads the winner's).
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	for {
		e, err := s.kv.Get(ctx, keySecret)
		if err == nil {
			return e.Value(), nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("natsstore: secret: %w", err)
		}
		secret, err := auth.LoadSecret("")
		if err != nil {
			return nil, err
		}
		if _, err := s.kv.Create(ctx, keySecret, secret); err == nil {
			return secret, nil
		} else if !conflict(err) {
			return nil, fmt.Errorf("natsstore: secret: %w", err)
		}
	}
}
