package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errSilent is a process of clients that said nothing before the
// deadline.
var errSilent = errors.New("nothing said before the deadline")

// report is what a process of clients says of its clients (clients.mjs's
// report, goReport).
type report struct {
	Clients   int     `json:"clients"`
	Resynced  int     `json:"resynced"`  // clients that subscribed again after a reconnect
	Recovered int     `json:"recovered"` // of them, those whose every resync said recovered: true
	Elsewhere int     `json:"elsewhere"` // of them, those connected to a node other than node 0
	Expected  int     `json:"expected"`  // deliveries of acknowledged NOTIFYs owed
	Missed    int     `json:"missed"`
	Doubled   int     `json:"doubled"`
	Disorder  int     `json:"disorder"` // notifications whose seq was not above the one before
	First     []int64 `json:"first"`    // per client, its first resync (ms since the epoch; 0: none)
	// States counts the clients by their state ("open", "reconnecting", ...)
	// among those not subscribed again.
	States map[string]int `json:"states"`

	// The trace since ready, up to each client's first resync (with
	// detail only): per client, when its connection of ready ended
	// (Drop), when the connection that subscribed again opened (Opened;
	// ms since the epoch, 0: none) and how many attempts it took
	// (Attempts); what ended the attempts that failed (Ended: what ->
	// count); the waits between an attempt's end and the next one's
	// start (Waits, ms).
	Drop     []int64        `json:"drop,omitempty"`
	Opened   []int64        `json:"opened,omitempty"`
	Attempts []int          `json:"attempts,omitempty"`
	Ended    map[string]int `json:"ended,omitempty"`
	Waits    []int          `json:"waits,omitempty"`
	Probes   int            `json:"probes,omitempty"` // reso.js's GETs learning a failed handshake's status
}

// add adds o to r.
func (r *report) add(o report) {
	r.Clients += o.Clients
	r.Resynced += o.Resynced
	r.Recovered += o.Recovered
	r.Elsewhere += o.Elsewhere
	r.Expected += o.Expected
	r.Missed += o.Missed
	r.Doubled += o.Doubled
	r.Disorder += o.Disorder
	r.First = append(r.First, o.First...)
	for k, n := range o.States {
		if r.States == nil {
			r.States = map[string]int{}
		}
		r.States[k] += n
	}
	r.Drop = append(r.Drop, o.Drop...)
	r.Opened = append(r.Opened, o.Opened...)
	r.Attempts = append(r.Attempts, o.Attempts...)
	r.Waits = append(r.Waits, o.Waits...)
	r.Probes += o.Probes
	for k, n := range o.Ended {
		if r.Ended == nil {
			r.Ended = map[string]int{}
		}
		r.Ended[k] += n
	}
}

// clientProc is a process of clients: this program again (Go clients)
// or Node running clients.mjs (reso.js).
type clientProc struct {
	kind   string // "go" or "js"
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
	done   chan struct{}
}

// startProc starts a process of clients with the configuration cfg:
// argv, with RESO_DEATH set and env added.
func startProc(kind, name string, argv []string, env []string, cfg childConfig) (*clientProc, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), env...), "RESO_DEATH="+string(b))
	p := &clientProc{kind: kind, name: name, cmd: cmd, lines: make(chan []byte, 16), stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
		close(p.lines)
		cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// next decodes the process's next line into v, waiting until deadline.
func (p *clientProc) next(v any, deadline time.Time) error {
	select {
	case line, ok := <-p.lines:
		if !ok {
			return fmt.Errorf("%s ended: %s", p.name, p.stderr.String())
		}
		var e struct{ Error string }
		if json.Unmarshal(line, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", p.name, e.Error)
		}
		return json.Unmarshal(line, v)
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("%s: %w", p.name, errSilent)
	}
}

// ready waits until the process's clients are ready.
func (p *clientProc) ready(deadline time.Time) error {
	var r struct{ Ready *int }
	if err := p.next(&r, deadline); err != nil {
		return err
	}
	if r.Ready == nil {
		return fmt.Errorf("%s: no ready line", p.name)
	}
	return nil
}

// report asks the process for its report against acked, with the
// clients' traces when detail is set.
func (p *clientProc) report(acked map[string][]int, detail bool, deadline time.Time) (report, error) {
	if acked == nil {
		acked = map[string][]int{}
	}
	b, err := json.Marshal(map[string]any{"report": acked, "detail": detail})
	if err != nil {
		return report{}, err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return report{}, fmt.Errorf("%s: %w", p.name, err)
	}
	var r struct{ Report *report }
	if err := p.next(&r, deadline); err != nil {
		return report{}, err
	}
	if r.Report == nil {
		return report{}, fmt.Errorf("%s: no report", p.name)
	}
	return *r.Report, nil
}

// stop ends the process: "close", and SIGKILL after 20 s.
func (p *clientProc) stop() {
	io.WriteString(p.in, "close\n")
	p.in.Close()
	go func() {
		for range p.lines {
		}
	}()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cpu is the CPU time the process has used so far (see procCPU).
func (p *clientProc) cpu() (time.Duration, bool) { return procCPU(p.cmd.Process.Pid) }

// procCPU is the CPU time (user and system) the process pid has used so
// far, read from /proc/<pid>/stat (Linux; clock ticks of 1/100 s, the
// kernel's USER_HZ); false where it cannot be read.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: state is the 3rd field, utime the 14th, stime the
	// 15th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}
