package jepsen

// inject hits a target with a fault of kind k: it returns the target's
// name and how to undo what was done, also when it failed halfway.
type inject func(f *Fleet, k Kind) (target string, undo func() error, err error)

// fleetKinds are the kinds of faults a Fleet can suffer, in the order
// Faults returns them.
var fleetKinds = []Kind{
	KillNode, KillNATSLeader, KillNATSFollower,
	CutNodeDrop, CutNodeStall, CutNATSDrop, CutNATSStall,
	PauseNode, PauseNATSLeader, MoveLeader,
}

// nodeKinds are the kinds of faults of nodes (true) and those of servers.
var nodeKinds = map[Kind]bool{
	KillNode: true, CutNodeDrop: true, CutNodeStall: true, PauseNode: true,
}

// fleetInjects inject each kind of fleetKinds.
var fleetInjects = map[Kind]inject{
	KillNode:         injectKillNode,
	KillNATSLeader:   injectKillNATS,
	KillNATSFollower: injectKillNATS,
	CutNodeDrop:      injectCutNode,
	CutNodeStall:     injectCutNode,
	CutNATSDrop:      injectCutNATS,
	CutNATSStall:     injectCutNATS,
	PauseNode:        injectPauseNode,
	PauseNATSLeader:  injectPauseNATSLeader,
	MoveLeader:       injectMoveLeader,
}

// claimFreeNode picks a node under no fault and marks it as under k.
func (f *Fleet) claimFreeNode(k Kind) (int, error) {
	i := f.pick(f.freeNodes())
	if i < 0 || !f.claimNode(i, k) {
		return -1, errNoTarget
	}
	return i, nil
}

// awaitNode waits until node i is ready and marks it as under no fault.
// While a server is under a fault it does not wait: the node may be
// unable to join the fleet or be ready until that fault ends (its
// connection may go to a server cut off from the others, as a client's
// would in a partition).
func (f *Fleet) awaitNode(i int) error {
	if !f.serverFaulted() {
		if err := f.nodes[i].awaitReady(healWithin); err != nil {
			return err
		}
	}
	f.releaseNode(i)
	return nil
}

// awaitServer marks server i as under no fault and waits until the log
// stream has a leader and every server under no fault is a current
// replica.
func (f *Fleet) awaitServer(i int) error {
	f.releaseServer(i)
	ok := f.healthyServers()
	return f.watch.awaitCurrent(ok, ok, healWithin)
}

// injectKillNode kills a node with SIGKILL; the undo starts it again
// (same flags, same directory) and waits until it is ready.
func injectKillNode(f *Fleet, k Kind) (string, func() error, error) {
	i, err := f.claimFreeNode(k)
	if err != nil {
		return "", nil, err
	}
	undo := func() error {
		if err := f.nodes[i].start(); err != nil {
			return err
		}
		return f.awaitNode(i)
	}
	return nodeName(i), undo, f.killNode(i)
}

// injectCutNode cuts a node's connections to every server (CutNodeDrop:
// closed, new ones refused; CutNodeStall: open, carrying nothing); the
// undo lets them carry again and waits until the node is ready.
func injectCutNode(f *Fleet, k Kind) (string, func() error, error) {
	i, err := f.claimFreeNode(k)
	if err != nil {
		return "", nil, err
	}
	for _, l := range f.links[i] {
		if k == CutNodeDrop {
			l.Drop()
		} else {
			l.Stall()
		}
	}
	undo := func() error {
		for _, l := range f.links[i] {
			l.Heal()
		}
		return f.awaitNode(i)
	}
	return nodeName(i), undo, nil
}

// injectPauseNode stops a node with SIGSTOP; the undo sends SIGCONT and
// waits until the node is ready.
func injectPauseNode(f *Fleet, k Kind) (string, func() error, error) {
	i, err := f.claimFreeNode(k)
	if err != nil {
		return "", nil, err
	}
	undo := func() error {
		if err := f.nodes[i].resume(); err != nil {
			return err
		}
		return f.awaitNode(i)
	}
	return nodeName(i), undo, f.nodes[i].pause()
}

// claimLeader marks the log stream's leader as under k and returns it.
func (f *Fleet) claimLeader(k Kind) (int, error) {
	leader, err := f.Leader()
	if err != nil {
		return -1, err
	}
	if !f.claimServer(leader, k) {
		return -1, errNoTarget
	}
	return leader, nil
}

// injectKillNATS kills with SIGKILL the leader of the log stream
// (KillNATSLeader) or another server (KillNATSFollower); the undo starts
// it again with its store and waits until the stream's replicas are
// current.
func injectKillNATS(f *Fleet, k Kind) (string, func() error, error) {
	var i int
	var err error
	if k == KillNATSLeader {
		i, err = f.claimLeader(k)
	} else {
		var leader int
		if leader, err = f.Leader(); err == nil {
			i = f.pick(f.freeServers(leader))
			if i < 0 || !f.claimServer(i, k) {
				err = errNoTarget
			}
		}
	}
	if err != nil {
		return "", nil, err
	}
	f.nats.Kill(i)
	undo := func() error {
		if err := f.nats.Restart(i); err != nil {
			return err
		}
		return f.awaitServer(i)
	}
	return serverName(i), undo, nil
}

// injectCutNATS cuts a server's routes to the others (CutNATSDrop:
// closed, new ones refused; CutNATSStall: open, carrying nothing): a
// random server, the log stream's leader one time in three; the undo
// lets them carry again and waits until the stream's replicas are
// current.
func injectCutNATS(f *Fleet, k Kind) (string, func() error, error) {
	i := -1
	if f.chance(3) {
		if leader, err := f.Leader(); err == nil && f.claimServer(leader, k) {
			i = leader
		}
	}
	if i < 0 {
		i = f.pick(f.freeServers())
		if i < 0 || !f.claimServer(i, k) {
			return "", nil, errNoTarget
		}
	}
	if k == CutNATSDrop {
		f.nats.Cut(i)
	} else {
		f.nats.Stall(i)
	}
	undo := func() error {
		f.nats.Heal(i)
		return f.awaitServer(i)
	}
	return serverName(i), undo, nil
}

// injectPauseNATSLeader stops the log stream's leader with SIGSTOP; the
// undo sends SIGCONT and waits until the stream's replicas are current.
func injectPauseNATSLeader(f *Fleet, k Kind) (string, func() error, error) {
	i, err := f.claimLeader(k)
	if err != nil {
		return "", nil, err
	}
	undo := func() error {
		if err := f.nats.Resume(i); err != nil {
			return err
		}
		return f.awaitServer(i)
	}
	return serverName(i), undo, f.nats.Pause(i)
}

// injectMoveLeader asks the log stream's leader to step down and waits
// until another server leads; it needs no undo.
func injectMoveLeader(f *Fleet, k Kind) (string, func() error, error) {
	from, to, err := f.watch.stepDown(f.healthyServers(), leaderWithin)
	target := serverName(from)
	if to >= 0 {
		target += " -> " + serverName(to)
	}
	return target, nil, err
}
