package jepsen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// RunConfig says how Run drives an Env. Zero fields take the defaults
// given.
type RunConfig struct {
	// Kinds are the kinds of faults injected, in turn; none: every kind
	// the Env has. NoFaults runs without any.
	Kinds    []Kind
	NoFaults bool
	// Duration is the clients' time, faults included (default 30 s).
	Duration time.Duration
	// Clients is how many register clients run (default 12), on Keys
	// keys (default 4).
	Clients int
	Keys    int
	// CreateKeys is how many parents see rounds of racing creates
	// (default 2), each with Racers POSTs at once (default 3).
	CreateKeys int
	Racers     int
	// Subscribers is how many subscribers follow the stream's resource
	// (default 2 per node, at least 3).
	Subscribers int
	// Hold is how long a fault stays in force (default 3 s), Quiet the
	// time between a heal and the next fault, and before the first
	// (default 2 s).
	Hold  time.Duration
	Quiet time.Duration
	// Timeout bounds each request (default 5 s); Think is the most a
	// client waits between two operations (default 5 ms).
	Timeout time.Duration
	Think   time.Duration
	// CheckTimeout bounds porcupine's check of one key (default 2 min);
	// a key it cannot decide in that time is reported in
	// Result.Undecided, not as a violation.
	CheckTimeout time.Duration
	// Sabotage makes the recorder lie (see sabotage.go): each model's
	// check must then fail.
	Sabotage bool
	// Dir is where the history and the visualizations are written on a
	// violation (always when Verbose); "" writes nothing.
	Dir     string
	Verbose bool
	// Seed seeds the clients' choices (0: a random seed, in Result).
	Seed uint64
	// Prefix starts the names of the run's resources (default "/j" and
	// a number of the clock), so that runs on one Env do not meet.
	Prefix string
	// Logf, when set, hears of each fault and each phase.
	Logf func(format string, args ...any)
}

// withDefaults returns cfg with its zero fields set.
func (cfg RunConfig) withDefaults(nodes int) RunConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&cfg.Duration, 30*time.Second)
	def(&cfg.Hold, 3*time.Second)
	def(&cfg.Quiet, 2*time.Second)
	def(&cfg.Timeout, 5*time.Second)
	def(&cfg.Think, 5*time.Millisecond)
	def(&cfg.CheckTimeout, 2*time.Minute)
	defInt(&cfg.Clients, 12)
	defInt(&cfg.Keys, 4)
	defInt(&cfg.CreateKeys, 2)
	defInt(&cfg.Racers, 3)
	defInt(&cfg.Subscribers, max(3, 2*nodes))
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("/j%x", time.Now().UnixNano()%(1<<32))
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return cfg
}

// FaultRecord is one fault injected during a run.
type FaultRecord struct {
	Kind   Kind   `json:"kind"`
	Target string `json:"target"`
	Inject int64  `json:"inject"` // when Inject was called, on the history's clock
	Heal   int64  `json:"heal"`   // when Heal returned
	Err    string `json:"err,omitempty"`
	// FirstAck is when the first write invoked after Inject was
	// acknowledged; -1 when none was.
	FirstAck int64 `json:"first_ack"`
}

// ToFirstAck returns the time from the injection to the first
// acknowledged write invoked after it, and false when there was none.
func (f FaultRecord) ToFirstAck() (time.Duration, bool) {
	if f.FirstAck < 0 {
		return 0, false
	}
	return time.Duration(f.FirstAck - f.Inject), true
}

// Result is what a run found.
type Result struct {
	// Label names the faults injected: their kind, "mixed" when they
	// were of several kinds, "none" without faults.
	Label    string
	Seed     uint64
	Duration time.Duration // the clients' time
	// Ops counts the operations that happened or may have (outcome OK
	// or Unknown) of every model; Unknown those of unknown outcome;
	// Failed the reads that failed and the writes refused.
	Ops, Unknown, Failed int
	// OpsByModel counts Ops per model.
	OpsByModel map[string]int
	// Violations are the keys a model refused.
	Violations []Violation
	// Undecided are the keys porcupine could not decide in time.
	Undecided []string
	// Problems are answers the docs do not allow and failures of the
	// harness (faults that could not be injected or healed): the run
	// is not valid with any.
	Problems []string
	Faults   []FaultRecord
	// Sabotaged lists what the sabotage switch changed.
	Sabotaged []string
	// Dir is where files were written; History the history file (JSON
	// lines), Streams the subscribers' notifications; "" when not
	// written.
	Dir, History, Streams string
}

// OpsPerSecond returns Ops over the clients' time.
func (r Result) OpsPerSecond() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Duration.Seconds()
}

// OK reports whether the run found no violation and no problem.
func (r Result) OK() bool { return len(r.Violations) == 0 && len(r.Problems) == 0 }

// Run drives env for cfg.Duration: register clients, rounds of racing
// creates and a stream's writer and subscribers, while faults come and go
// on a schedule (inject, hold, heal, quiet). Then it heals env, reads
// every key on every node, waits for every subscriber to see one last
// write, and checks the history.
func Run(env Env, cfg RunConfig) Result {
	cfg = cfg.withDefaults(env.Nodes())
	hist := NewHistory()
	res := Result{Seed: cfg.Seed, Label: "none", OpsByModel: map[string]int{}}
	var faults []Fault
	if !cfg.NoFaults {
		faults = env.Faults(cfg.Kinds...)
		if len(faults) == 0 {
			hist.Problem(fmt.Sprintf("the Env has no fault of the kinds %v", cfg.Kinds))
		}
		var kinds []string
		for _, f := range faults {
			if !slices.Contains(kinds, string(f.Kind())) {
				kinds = append(kinds, string(f.Kind()))
			}
		}
		switch len(kinds) {
		case 0:
		case 1:
			res.Label = kinds[0]
		default:
			res.Label = "mixed"
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	w := &workers{env: env, hist: hist, door: newHTTPDoor(env, hist, cfg.Timeout), timeout: cfg.Timeout, think: cfg.Think, stop: make(chan struct{})}
	defer w.door.close()

	var regKeys, createKeys []string
	for i := range cfg.Keys {
		regKeys = append(regKeys, fmt.Sprintf("%s-r%d", cfg.Prefix, i))
	}
	for i := range cfg.CreateKeys {
		createKeys = append(createKeys, fmt.Sprintf("%s-c%d", cfg.Prefix, i))
	}
	streamRes := cfg.Prefix + "-s0"

	// The subscribers first, so that they see the stream's first write.
	subsDone := make(chan struct{})
	var subWG sync.WaitGroup
	var subs []*subscriber
	for i := range cfg.Subscribers {
		s := &subscriber{ID: i, Resource: streamRes}
		subs = append(subs, s)
		// Every other subscriber moves to the next node every 5 s or so.
		var hop time.Duration
		if i%2 == 1 {
			hop = time.Duration(4000+rng.IntN(2000)) * time.Millisecond
		}
		subWG.Go(func() { s.follow(w, i%env.Nodes(), hop, subsDone) })
	}
	awaitSubscribed(hist, subs, 30*time.Second)
	cfg.Logf("run %s: %d subscribers on %s, seed %d", res.Label, len(subs), streamRes, cfg.Seed)

	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.Clients {
		r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { w.registerClient(r, regKeys) })
	}
	for _, parent := range createKeys {
		r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { w.createRounds(r, parent, cfg.Racers) })
	}
	{
		r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { w.streamWriter(r, streamRes) })
	}

	records := schedule(hist, faults, cfg, start.Add(cfg.Duration), rng)
	if d := time.Until(start.Add(cfg.Duration)); d > 0 {
		time.Sleep(d)
	}
	close(w.stop)
	wg.Wait()
	res.Duration = time.Since(start)
	cfg.Logf("run %s: clients stopped after %v; healing", res.Label, res.Duration.Round(time.Millisecond))

	if err := env.Heal(); err != nil {
		hist.Problem(fmt.Sprintf("heal: %v", err))
	}
	finalReads(w, regKeys)
	final, behind := finalWrite(w, streamRes, subs)
	close(subsDone)
	subWG.Wait()

	ops := hist.Ops()
	end := hist.Clock.Now() + 1
	for i := range records {
		records[i].FirstAck = firstAck(ops, records[i].Inject)
	}
	res.Faults = records
	if cfg.Sabotage {
		done, notes := sabotage(ops)
		for m, keys := range done {
			res.Sabotaged = append(res.Sabotaged, fmt.Sprintf("%s: %s", m, strings.Join(keys, ", ")))
		}
		res.Sabotaged = append(res.Sabotaged, sabotageStream(subs)...)
		res.Sabotaged = append(res.Sabotaged, notes...)
	}
	for _, op := range ops {
		switch op.Outcome {
		case Fail:
			res.Failed++
		case Unknown:
			res.Unknown++
			fallthrough
		default:
			res.Ops++
			res.OpsByModel[op.Model]++
		}
	}

	var dir string
	if cfg.Dir != "" {
		dir = filepath.Join(cfg.Dir, strings.ReplaceAll(res.Label, "+", "_")+"-"+strings.TrimPrefix(cfg.Prefix, "/"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			hist.Problem(fmt.Sprintf("output directory: %v", err))
			dir = ""
		}
	}
	cfg.Logf("run %s: checking %d operations", res.Label, len(ops))
	for _, m := range []struct {
		name string
		c    linearCheck
	}{
		{ModelRegister, checkLinear(ModelRegister, registerModel, registerOp, ops, end, cfg.CheckTimeout, dir, cfg.Verbose)},
		{ModelCreate, checkLinear(ModelCreate, createModel, createOp, ops, end, cfg.CheckTimeout, dir, cfg.Verbose)},
	} {
		res.Violations = append(res.Violations, m.c.violations...)
		for _, k := range m.c.timedOut {
			res.Undecided = append(res.Undecided, m.name+" "+k)
		}
		for _, p := range m.c.problems {
			hist.Problem(p)
		}
	}
	res.Violations = append(res.Violations, checkStream(streamRes, subs, ops, final)...)
	for _, id := range behind {
		res.Violations = append(res.Violations, Violation{Model: ModelStream, Key: streamRes,
			Detail: fmt.Sprintf("subscriber %d did not read the final write %d within %v of its acknowledgement", id, final, finalBound)})
	}
	res.Problems = hist.Problems()

	if dir != "" && len(res.Violations) == 0 && !cfg.Verbose {
		_ = os.Remove(dir) // empty: nothing to keep
	}
	if dir != "" && (len(res.Violations) > 0 || cfg.Verbose) {
		res.Dir = dir
		res.History = filepath.Join(dir, "history.jsonl")
		if err := writeJSONLines(res.History, ops); err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("writing the history: %v", err))
		}
		res.Streams = filepath.Join(dir, "streams.json")
		if err := writeJSON(res.Streams, map[string]any{"subscribers": subs, "faults": records}); err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("writing the streams: %v", err))
		}
	}
	return res
}

// awaitSubscribed waits until every subscriber has subscribed once; when
// the bound runs out first, it records a problem.
func awaitSubscribed(hist *History, subs []*subscriber, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for {
		if time.Now().After(deadline) {
			hist.Problem(fmt.Sprintf("stream: the subscribers did not all subscribe within %v", bound))
			return
		}
		all := true
		for _, s := range subs {
			s.mu.Lock()
			all = all && len(s.Segments) > 0
			s.mu.Unlock()
		}
		if all {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// schedule injects faults in turn until the end: quiet, inject, hold,
// heal, and so on, as long as a hold fits before the end. It returns
// once the last fault is healed, with a record of each.
func schedule(hist *History, faults []Fault, cfg RunConfig, end time.Time, rng *rand.Rand) []FaultRecord {
	if len(faults) == 0 {
		return nil
	}
	order := rng.Perm(len(faults))
	var records []FaultRecord
	sleepUntil := func(t time.Time) {
		if d := time.Until(t); d > 0 {
			time.Sleep(d)
		}
	}
	for i := 0; ; i++ {
		sleepUntil(time.Now().Add(cfg.Quiet))
		if time.Until(end) < cfg.Hold {
			break
		}
		f := faults[order[i%len(order)]]
		rec := FaultRecord{Kind: f.Kind(), Inject: hist.Clock.Now(), FirstAck: -1}
		err := f.Inject()
		rec.Target = f.Target()
		if err != nil {
			rec.Err = err.Error()
			hist.Problem(fmt.Sprintf("inject %s (%s): %v", f.Kind(), rec.Target, err))
		}
		cfg.Logf("fault %s on %s at %.3f s", f.Kind(), rec.Target, float64(rec.Inject)/1e9)
		sleepUntil(time.Now().Add(cfg.Hold))
		if err := f.Heal(); err != nil {
			hist.Problem(fmt.Sprintf("heal %s (%s): %v", f.Kind(), rec.Target, err))
			if rec.Err == "" {
				rec.Err = "heal: " + err.Error()
			}
		}
		rec.Heal = hist.Clock.Now()
		cfg.Logf("healed %s on %s at %.3f s", f.Kind(), rec.Target, float64(rec.Heal)/1e9)
		records = append(records, rec)
	}
	return records
}

// firstAck returns when the first write invoked after t was acknowledged
// (ops sorted by call time), or -1.
func firstAck(ops []Op, t int64) int64 {
	best := int64(-1)
	for _, op := range ops {
		if op.Call <= t || !op.isWrite() || op.Outcome != OK {
			continue
		}
		if best < 0 || op.Return < best {
			best = op.Return
		}
	}
	return best
}

// finalReads reads every key on every node once the faults are over,
// each read retried (bounded) until it answers.
func finalReads(w *workers, keys []string) {
	proc := w.hist.NewClient()
	for _, k := range keys {
		for n := range w.env.Nodes() {
			for range 10 {
				if op := w.door.get(context.Background(), proc, n, ModelRegister, k, "v"); op.Outcome == OK {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// finalBound bounds the wait for every subscriber to read the final
// write.
const finalBound = 30 * time.Second

// finalWrite writes one last value of the stream's resource (retried,
// bounded) and waits (bounded) until every subscriber read it. It returns
// the value, or 0 when no write was acknowledged, and the subscribers
// that did not read it.
func finalWrite(w *workers, resource string, subs []*subscriber) (int64, []int) {
	proc := w.hist.NewClient()
	var v int64
	for i := range 10 {
		op := w.door.put(context.Background(), proc, i%w.env.Nodes(), ModelStream, resource, w.values.Add(1))
		if op.Outcome == OK {
			v = op.Input
			break
		}
		if op.Outcome == Unknown {
			proc = w.hist.NewClient()
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v == 0 {
		w.hist.Problem("stream: the final write was never acknowledged")
		return 0, nil
	}
	var behind []int
	deadline := time.Now().Add(finalBound)
	for _, s := range subs {
		for !s.saw(v) {
			if time.Now().After(deadline) {
				behind = append(behind, s.ID)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return v, behind
}

// writeJSON writes v to path, indented.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
