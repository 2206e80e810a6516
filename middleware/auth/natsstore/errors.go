package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/middleware/auth"
)

// storeErr is the error of a NATS operation of the store: one that says
// the cluster did not answer (in time, at all, or over a closed
// connection) also wraps auth.ErrUnavailable, so that the request is
// answered 503, not 500; a cancelled request stays what it is.
func storeErr(err error) error {
	if unavailable(err) {
		return fmt.Errorf("natsstore: %w: %w", auth.ErrUnavailable, err)
	}
	return fmt.Errorf("natsstore: %w", err)
}

// unavailable reports whether err says the NATS cluster could not answer.
func unavailable(err error) bool {
	for _, e := range []error{
		context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		nats.ErrConnectionClosed, nats.ErrConnectionDraining, nats.ErrDisconnected,
		jetstream.ErrNoStreamResponse, jetstream.ErrNoHeartbeat,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	var api *jetstream.APIError
	// 503 from JetStream: no leader, or the cluster not ready.
	return errors.As(err, &api) && api.Code == 503
}
