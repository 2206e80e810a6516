package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/internal/natsname"
)

// logWatch is the harness's view of the fleet's log stream: a NATS
// client connection to each server of its own, straight to the server
// (past the proxies of the nodes), to ask JetStream who leads the stream
// and whether its replicas are current, and to move its leader.
type logWatch struct {
	stream string
	procs  *natstest.Procs
	conns  []*nats.Conn
	js     []jetstream.JetStream
}

// logStreamName returns the name of a fleet's log stream, as
// channel/fleet names it: RESO_<NAME UPPERCASED, - AS _>_LOG.
func logStreamName(fleet string) string {
	return natsname.Of(fleet, "LOG")
}

// logAsk bounds one question to one server.
const logAsk = 3 * time.Second

// newLogWatch connects to each of the n servers of p.
func newLogWatch(p *natstest.Procs, n int, stream string) (*logWatch, error) {
	w := &logWatch{stream: stream, procs: p}
	for i := range n {
		nc, err := nats.Connect("nats://"+p.Addr(i),
			nats.Name("jepsen harness"),
			nats.RetryOnFailedConnect(true),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(200*time.Millisecond),
			nats.Timeout(logAsk),
		)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("jepsen: connecting to nats-%d: %w", i, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			w.close()
			return nil, err
		}
		w.conns = append(w.conns, nc)
		w.js = append(w.js, js)
	}
	return w, nil
}

// close closes the connections.
func (w *logWatch) close() {
	for _, nc := range w.conns {
		nc.Close()
	}
}

// info asks the stream's state through each server of via in turn and
// returns the first answer.
func (w *logWatch) info(via []int) (*jetstream.StreamInfo, error) {
	err := errors.New("no server to ask")
	for _, i := range via {
		ctx, cancel := context.WithTimeout(context.Background(), logAsk)
		var s jetstream.Stream
		s, err = w.js[i].Stream(ctx, w.stream)
		cancel()
		if err == nil {
			return s.CachedInfo(), nil
		}
		err = fmt.Errorf("through nats-%d: %w", i, err)
	}
	return nil, err
}

// serverIndex returns i of a server named "nats-<i>", or -1.
func serverIndex(name string) int {
	var i int
	if _, err := fmt.Sscanf(name, "nats-%d", &i); err != nil {
		return -1
	}
	return i
}

// leader returns the server that leads the stream, as those of via see
// it, waiting for one at most within.
func (w *logWatch) leader(via []int, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for {
		info, err := w.info(via)
		if err == nil && info.Cluster != nil {
			if i := serverIndex(info.Cluster.Leader); i >= 0 {
				return i, nil
			}
			err = errors.New("no leader")
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("jepsen: no leader of %s within %v: %v", w.stream, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitCurrent waits, at most within, until the stream has a leader and
// each server of want that does not lead it is a replica current, online
// and with no lag as the leader sees it, and has stored, as it says
// itself, the stream up to where the leader had before (the servers
// under a fault are left out of want).
func (w *logWatch) awaitCurrent(via, want []int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		info, err := w.info(via)
		state := ""
		if err == nil && info.Cluster != nil {
			leader := serverIndex(info.Cluster.Leader)
			ok := leader >= 0
			state = "leader " + info.Cluster.Leader
			current := map[int]bool{leader: true}
			for _, r := range info.Cluster.Replicas {
				state += fmt.Sprintf(", %s current %v offline %v lag %d", r.Name, r.Current, r.Offline, r.Lag)
				current[serverIndex(r.Name)] = r.Current && !r.Offline && r.Lag == 0
			}
			for _, i := range want {
				ok = ok && current[i]
			}
			if ok {
				var behind string
				if behind, err = w.behind(leader, want); err == nil && behind == "" {
					return nil
				}
				state += "; " + behind
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jepsen: the replicas of %s not current within %v: %s (%v)", w.stream, within, state, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// behind returns the servers of want that have stored less of the stream
// than leader had before ("" when none has), as their monitoring
// endpoints say.
func (w *logWatch) behind(leader int, want []int) (string, error) {
	last, err := w.storedSeq(leader)
	if err != nil {
		return "", err
	}
	var out []string
	for _, i := range want {
		if i == leader {
			continue
		}
		seq, err := w.storedSeq(i)
		if err != nil {
			return "", err
		}
		if seq < last {
			out = append(out, fmt.Sprintf("nats-%d stored up to %d, the leader nats-%d %d", i, seq, leader, last))
		}
	}
	return strings.Join(out, ", "), nil
}

// monitorClient asks the servers' monitoring endpoints.
var monitorClient = &http.Client{Timeout: logAsk}

// storedSeq returns the last sequence of the stream that server i has
// stored, as its /jsz says.
func (w *logWatch) storedSeq(i int) (uint64, error) {
	resp, err := monitorClient.Get(w.procs.MonitorURL(i) + "/jsz?accounts=true&streams=true")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					LastSeq uint64 `json:"last_seq"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil {
		return 0, fmt.Errorf("nats-%d /jsz: %w", i, err)
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == w.stream {
				return s.State.LastSeq, nil
			}
		}
	}
	return 0, fmt.Errorf("nats-%d /jsz: no stream %s", i, w.stream)
}

// askStepDown sends the request of a stepdown through server i.
func (w *logWatch) askStepDown(i int, subject string) error {
	msg, err := w.conns[i].Request(subject, nil, logAsk)
	if err != nil {
		return fmt.Errorf("jepsen: stepdown of %s through nats-%d: %w", w.stream, i, err)
	}
	var resp struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil || !resp.Success {
		return fmt.Errorf("jepsen: stepdown of %s through nats-%d: %s", w.stream, i, msg.Data)
	}
	return nil
}

// stepDown asks the stream's leader to step down, through the first
// server of via that answers, and waits, at most within, until another
// server leads; it returns the old and the new leader.
func (w *logWatch) stepDown(via []int, within time.Duration) (from, to int, err error) {
	deadline := time.Now().Add(within)
	from, err = w.leader(via, within)
	if err != nil {
		return -1, -1, err
	}
	subject := "$JS.API.STREAM.LEADER.STEPDOWN." + w.stream
	// JetStream may answer that it is unavailable for a moment (a leader
	// just elected, a server just back): asked again until deadline.
	for asked := false; !asked; {
		for _, i := range via {
			if err = w.askStepDown(i, subject); err == nil {
				asked = true
				break
			}
		}
		if !asked {
			if time.Now().After(deadline) {
				return from, -1, err
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for {
		to, err = w.leader(via, time.Until(deadline))
		if err == nil && to != from {
			return from, to, nil
		}
		if time.Now().After(deadline) {
			return from, -1, fmt.Errorf("jepsen: %s still led by nats-%d %v after its stepdown (%v)", w.stream, from, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
