package doors

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/reso-project/reso/core"
)

// maxIdleExecers is how many goroutines of the exec pool wait for work
// between messages; one that finishes when that many wait returns.
const maxIdleExecers = 16

// execPool runs the tree's work of every session's messages on goroutines
// shared by all sessions. A session's goroutine spends its idle life
// waiting for the client's next message, which takes a shallow stack; the
// tree's work takes a deep one, and a goroutine's stack stays as deep as
// it ever grew until a collection finds it mostly unused. Were the work
// done on the session's goroutine, every idle session would keep a stack
// of 8 KiB (bench/channel-idle.sh); a goroutine per message would grow a
// fresh stack for each (three times the CPU of a message,
// BenchmarkSessionMessages). The pool's goroutines keep their deep stacks
// from one message to the next, and there are as many as messages being
// worked on at once, at most maxIdleExecers of them once all is quiet.
var execPool struct {
	jobs chan *execJob // unbuffered: a send succeeds when a goroutine waits
	idle atomic.Int32  // goroutines waiting, or about to, on jobs
}

func init() { execPool.jobs = make(chan *execJob) }

// execJob is one call of Exec. Jobs are pooled, so that an idle session
// holds none.
type execJob struct {
	c    core.TreeClient
	ctx  context.Context
	data []byte
	err  error
	pe   *core.PanicError // the panic of Exec, recovered on the pool
	done chan struct{}
}

var execJobs = sync.Pool{New: func() any { return &execJob{done: make(chan struct{}, 1)} }}

// exec calls c.Exec(ctx, data) on a goroutine of the pool and waits for
// it: a session's messages are worked on one after the other, in order,
// as when the session's goroutine did the work. A panic in Exec is raised
// again on the caller's goroutine, whose handler recovers it.
func exec(ctx context.Context, c core.TreeClient, data []byte) error {
	j := execJobs.Get().(*execJob)
	j.ctx, j.c, j.data = ctx, c, data
	select {
	case execPool.jobs <- j:
	default:
		go execer(j)
	}
	<-j.done
	err, pe := j.err, j.pe
	*j = execJob{done: j.done}
	execJobs.Put(j)
	if pe != nil {
		panic(pe)
	}
	return err
}

// hotAfter is how many messages a session sends before the tree's work
// of its messages runs on its own goroutine (execHere) rather than the
// pool's: a session that sends that many keeps sending (a publisher),
// and the hand-over to the pool and back cost it two goroutine switches
// per message; its stack grows once, and shrinks again at a collection
// once it is idle. A session that subscribes and listens never gets
// there, and so keeps its shallow stack.
const hotAfter = 64

// execHere calls c.Exec(ctx, data) on the caller's goroutine, with the
// pool's handling of a panic: it is raised again as a *core.PanicError.
func execHere(ctx context.Context, c core.TreeClient, data []byte) error {
	defer func() {
		if v := recover(); v != nil {
			panic(core.NewPanicError(v))
		}
	}()
	return c.Exec(ctx, data)
}

// run calls Exec and signals the job done.
func (j *execJob) run() {
	defer func() {
		if v := recover(); v != nil {
			j.pe = core.NewPanicError(v)
		}
		j.done <- struct{}{}
	}()
	j.err = j.c.Exec(j.ctx, j.data)
}

// execer is a goroutine of the pool: it runs j, then the jobs sent to it
// while it waits, until it finishes one while maxIdleExecers wait.
func execer(j *execJob) {
	for {
		j.run()
		if execPool.idle.Add(1) > maxIdleExecers {
			execPool.idle.Add(-1)
			return
		}
		j = <-execPool.jobs
		execPool.idle.Add(-1)
	}
}
