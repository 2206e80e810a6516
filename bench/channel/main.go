// Command channel is the load client of the resource channel's figures
// (issue 9): it speaks the WebSocket door (docs/channel.md) to a running
// reso and prints counts and rates measured in one run. It runs in its own
// process, started by the bench/channel-*.sh scripts. Every load is bounded
// in count and in time.
//
//	channel idle    -url ws://H:P/channel [-pid PID] [-debug H:P] [-n 10000]
//	channel fanout  -url ws://H:P/channel [-pid PID] [-s 1000] [-window 32] [-d 5s]
//	channel channels -url ws://H:P/channel [-pid PID] [-n 1000] [-s 1] [-window 4] [-d 5s]
//	channel writes  -url ws://H:P/channel [-pid PID] [-phases notify@32,persistent@32,...] [-d 3s] [-sqlite DIR]
//	channel hygiene -url ws://H:P/channel -debug H:P [-pid PID] [-k 10000] [-conc 64] [-wait 60s]
//	channel rules   -url ws://H:P/channel -login EMAIL:PASSWORD -admin-token-file FILE [-pid PID] [-s 1000] [-rounds 10] [-d 500ms]
//	channel soak    -url ws://H:P/channel[,...] -pid PID[,...] -debug H:P[,...] [-c 8] [-warmup 1m] [-d 10m] [-every 15s]
//
// It uses gorilla/websocket rather than coder/websocket to keep the
// client's own cost per message and per connection low: one process holds
// 10,000 connections and reads 200,000 notifications a second on the same
// two cores as the server. Gorilla's connection takes a read buffer of any
// size and a shared pool of write buffers (an idle connection holds 1 KiB
// of buffers), reads each message into a buffer the caller reuses with no
// context to arm per read (coder/websocket registers a context.AfterFunc
// on every read), and hands out the raw net.Conn, which the hygiene figure
// closes to drop a connection without a close frame.
//
// With -pid the server's RSS, open descriptors and CPU time (user and
// system: each load that publishes or writes prints the system time's
// share of the server's CPU) are read from /proc; with -debug (the address of reso -admin-addr, with -pprof) its
// goroutines from the metrics (go_goroutines) and its heap from
// net/http/pprof. The soak takes several servers (a fleet's nodes): -url,
// -pid and -debug then list them, comma-separated, in the same order.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "channel:", err)
		os.Exit(1)
	}
}

// errNotClean makes the exit status non-zero when hygiene gave up.
var errNotClean = errors.New("hygiene: the server was not back to its baseline in time")

func run(args []string) error {
	if len(args) < 1 {
		return errors.New("usage: channel idle|fanout|channels|writes|hygiene|rules|soak [flags] (-h for each)")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	wsURL := fs.String("url", "", "the channel door, ws://HOST:PORT/channel")
	pid := fs.String("pid", "", "the server's process id, for its RSS (with its child processes), descriptors and CPU time (empty: not measured); soak: PID,PID,... one per -url")
	debug := fs.String("debug", "", "HOST:PORT of the server's -admin-addr (with -pprof), for goroutines (its metrics) and heap (pprof); soak: one per -url, comma-separated")
	dialConc := fs.Int("dial-conc", 64, "connections opened at once (at most 1024)")
	readBuf := fs.Int("read-buf", 1024, "read buffer per connection, bytes (256 to 1 MiB)")
	timeout := fs.Duration("timeout", 2*time.Minute, "longest time for opening the connections or running the cycles (at most 10m)")
	checks := []func() error{
		func() error { return inRange("dial-conc", *dialConc, 1, 1024) },
		func() error { return inRange("read-buf", *readBuf, 256, 1<<20) },
		func() error { return durRange("timeout", *timeout, time.Second, 10*time.Minute) },
	}
	var do func(*dialer, *probe) error
	var doMany func([]*dialer, []*probe) error // a command that takes several servers
	switch cmd {
	case "idle":
		var cfg idleConfig
		fs.IntVar(&cfg.n, "n", 10_000, "connections (at most 100,000)")
		fs.StringVar(&cfg.prefix, "prefix", "/idle/c", "connection i subscribes to PREFIX<i>")
		fs.DurationVar(&cfg.settle, "settle", 2*time.Second, "wait after the last reply before measuring (at most 1m)")
		checks = append(checks,
			func() error { return inRange("n", cfg.n, 1, 100_000) },
			func() error { return durRange("settle", cfg.settle, 0, time.Minute) })
		do = func(d *dialer, p *probe) error {
			cfg.dialConc, cfg.timeout, cfg.readBuf = *dialConc, *timeout, *readBuf
			res, err := runIdle(d, p, cfg)
			if err != nil {
				return err
			}
			res.print(os.Stdout, cfg)
			return nil
		}
	case "fanout", "channels":
		var cfg fanoutConfig
		if cmd == "fanout" {
			cfg.channels = 1
			fs.IntVar(&cfg.subs, "s", 1000, "subscriber connections (at most 20,000)")
			fs.StringVar(&cfg.resource, "resource", "/fan", "the resource subscribed to and notified")
			fs.IntVar(&cfg.window, "window", 32, "NOTIFYs sent and not yet answered (1 to 1024)")
		} else {
			fs.IntVar(&cfg.channels, "n", 1000, "channels, each with its subscribers and one publisher (at most 10,000)")
			fs.IntVar(&cfg.subs, "s", 1, "subscriber connections per channel (channels x s at most 20,000)")
			fs.StringVar(&cfg.resource, "resource", "/ch", "channel k is the resource RESOURCE/c<k>")
			fs.IntVar(&cfg.window, "window", 4, "NOTIFYs sent and not yet answered, per publisher (1 to 1024)")
		}
		fs.IntVar(&cfg.dataSize, "data", 100, "bytes of data in each NOTIFY (20 to 60,000)")
		fs.DurationVar(&cfg.warmup, "warmup", time.Second, "publishing before measuring (at most 30s)")
		fs.DurationVar(&cfg.dur, "d", 5*time.Second, "measured time (at most 60s)")
		fs.Int64Var(&cfg.maxSends, "max", 1_000_000, "most NOTIFYs in the run, all publishers (at most 10,000,000)")
		fs.DurationVar(&cfg.drain, "drain", 10*time.Second, "wait for the last replies and notifications (at most 1m)")
		checks = append(checks,
			func() error { return inRange("n", cfg.channels, 1, 10_000) },
			func() error { return inRange("s", cfg.subs, 1, 20_000/cfg.channels) },
			func() error { return inRange("window", cfg.window, 1, 1024) },
			func() error { return inRange("data", cfg.dataSize, 20, 60_000) },
			func() error { return durRange("warmup", cfg.warmup, 0, 30*time.Second) },
			func() error { return durRange("d", cfg.dur, 100*time.Millisecond, time.Minute) },
			func() error { return inRange("max", int(cfg.maxSends), 1, 10_000_000) },
			func() error { return durRange("drain", cfg.drain, 0, time.Minute) })
		do = func(d *dialer, p *probe) error {
			cfg.dialConc, cfg.timeout, cfg.readBuf = *dialConc, *timeout, *readBuf
			res, err := runFanout(d, p, cfg)
			if err != nil {
				return err
			}
			res.print(os.Stdout, cfg)
			return nil
		}
	case "writes":
		var cfg writesConfig
		phases := fs.String("phases", "notify@32,persistent@32,notify@256,transient@256",
			"MODE@CONNS,... measured in this order; MODE is persistent, transient or notify (the baseline the next phases are compared with)")
		fs.IntVar(&cfg.window, "window", 16, "requests sent and not yet answered per connection (1 to 1024)")
		fs.StringVar(&cfg.prefix, "prefix", "/bench/", "resources are PREFIX<mode initial><run>/c<conn>/<key>")
		fs.Int64Var(&cfg.keys, "keys", 0, "0: every PUT creates a new resource; K: each connection replaces K resources in turn")
		fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "running before measuring, per phase (at most 30s)")
		fs.DurationVar(&cfg.dur, "d", 3*time.Second, "measured time per phase (at most 60s)")
		fs.Int64Var(&cfg.maxOps, "max", 5_000_000, "most requests per phase (at most 50,000,000)")
		pause := fs.Duration("pause", time.Second, "pause between phases (at most 30s)")
		rounds := fs.Int("rounds", 1, "times the phases are measured in order, in the same server; more than 1 prints each mode's ratios to notify over the rounds, the first apart (1 to 50)")
		floorDir := fs.String("sqlite", "", "DIR: also measure plain SQLite inserts in a new directory in DIR (on the disk of reso's -db), autocommit and 512 per transaction, for -d each: the store's floor")
		var ps []phase
		checks = append(checks,
			func() error { return inRange("window", cfg.window, 1, 1024) },
			func() error { return inRange("keys", int(cfg.keys), 0, 1_000_000) },
			func() error { return durRange("warmup", cfg.warmup, 0, 30*time.Second) },
			func() error { return durRange("d", cfg.dur, 100*time.Millisecond, time.Minute) },
			func() error { return inRange("max", int(cfg.maxOps), 1, 50_000_000) },
			func() error { return durRange("pause", *pause, 0, 30*time.Second) },
			func() error { return inRange("rounds", *rounds, 1, 50) },
			func() (err error) { ps, err = parsePhases(*phases, 10_000); return err })
		do = func(d *dialer, p *probe) error {
			cfg.dialConc, cfg.timeout, cfg.readBuf = *dialConc, *timeout, *readBuf
			run := fmt.Sprintf("%x", time.Now().UnixNano())
			fmt.Printf("writes: window %d per connection, %.1fs measured per phase after %.1fs warm-up; keys %d (0: each PUT creates); targets: persistent 30,000/s, transient 100,000/s\n",
				cfg.window, cfg.dur.Seconds(), cfg.warmup.Seconds(), cfg.keys)
			if err := runWritesRounds(os.Stdout, d, p, cfg, ps, *rounds, run, *pause); err != nil {
				return err
			}
			if *floorDir != "" {
				return sqliteFloor(os.Stdout, *floorDir, cfg.dur)
			}
			return nil
		}
	case "hygiene":
		var cfg hygieneConfig
		fs.IntVar(&cfg.cycles, "k", 10_000, "cycles (at most 100,000)")
		fs.IntVar(&cfg.conc, "conc", 64, "cycles at once (at most 1024)")
		fs.StringVar(&cfg.resource, "resource", "/hyg", "the resource subscribed to; transient children are RESOURCE/h<n>")
		fs.BoolVar(&cfg.prime, "prime", true, "before the baseline, run one cycle on RESOURCE-prime that ends with a close frame, so that what the server starts on first use is counted in the baseline")
		fs.BoolVar(&cfg.rst, "rst", false, "drop with a TCP reset (SO_LINGER 0) instead of a FIN")
		fs.BoolVar(&cfg.silent, "silent", false, "keep each socket open and stop reading instead of closing it: a dead peer, found only by the server's ping timeout")
		fs.Int64Var(&cfg.slack, "slack", 3, "goroutines above the baseline still counted as back")
		fs.DurationVar(&cfg.wait, "wait", time.Minute, "give up this long after the last drop: the dead-peer timeout plus a margin (at most 10m)")
		fs.DurationVar(&cfg.poll, "poll", 100*time.Millisecond, "time between checks (10ms to 10s)")
		checks = append(checks,
			func() error { return inRange("k", cfg.cycles, 1, 100_000) },
			func() error { return inRange("conc", cfg.conc, 1, 1024) },
			func() error { return inRange("slack", int(cfg.slack), 0, 1000) },
			func() error { return durRange("wait", cfg.wait, 0, 10*time.Minute) },
			func() error { return durRange("poll", cfg.poll, 10*time.Millisecond, 10*time.Second) },
			func() error {
				if *debug == "" {
					return errors.New("hygiene needs -debug (the server's goroutines)")
				}
				return nil
			})
		do = func(d *dialer, p *probe) error {
			cfg.timeout, cfg.readBuf = *timeout, *readBuf
			res, err := runHygiene(d, p, cfg)
			if err != nil {
				return err
			}
			res.print(os.Stdout, cfg)
			if !res.clean {
				return errNotClean
			}
			return nil
		}
	case "soak":
		var cfg soakConfig
		fs.IntVar(&cfg.clients, "c", 8, "clients looping at once (1 to 256)")
		fs.IntVar(&cfg.rooms, "rooms", 10, "rooms the clients take in turn (1 to 10,000)")
		fs.IntVar(&cfg.keys, "keys", 2000, "persistent records the clients replace in turn (1 to 1,000,000)")
		fs.StringVar(&cfg.prefix, "prefix", "/soak", "rooms are PREFIX/room<k>, records PREFIX/rec/<key>")
		fs.DurationVar(&cfg.warmup, "warmup", time.Minute, "churn before the measured time (at most 10m)")
		fs.DurationVar(&cfg.dur, "d", 10*time.Minute, "measured churn (1s to 30m)")
		fs.DurationVar(&cfg.every, "every", 15*time.Second, "time between two lines of figures (1s to 1m)")
		fs.DurationVar(&cfg.cooldown, "cooldown", 20*time.Second, "after the churn, figures once more when every server's goroutines and descriptors are back within -slack of their start, or this long after it (at most 5m)")
		fs.Int64Var(&cfg.slack, "slack", 10, "goroutines and descriptors above their start still counted as back (0 to 1000)")
		fs.BoolVar(&cfg.watchEvent, "watch-event", false, "drop a GET kept open after its first event, not after its status line")
		checks = append(checks,
			func() error { return inRange("c", cfg.clients, 1, 256) },
			func() error { return inRange("rooms", cfg.rooms, 1, 10_000) },
			func() error { return inRange("keys", cfg.keys, 1, 1_000_000) },
			func() error { return durRange("warmup", cfg.warmup, 0, 10*time.Minute) },
			func() error { return durRange("d", cfg.dur, time.Second, 30*time.Minute) },
			func() error { return durRange("every", cfg.every, time.Second, time.Minute) },
			func() error { return durRange("cooldown", cfg.cooldown, 0, 5*time.Minute) },
			func() error { return inRange("slack", int(cfg.slack), 0, 1000) })
		doMany = func(ds []*dialer, ps []*probe) error {
			cfg.readBuf = *readBuf
			res, err := runSoak(ds, ps, cfg, os.Stdout)
			if err != nil {
				return err
			}
			res.print(os.Stdout)
			return nil
		}
	case "rules":
		var cfg rulesConfig
		fs.IntVar(&cfg.subs, "s", 1000, "subscriber connections, each subscribed to both rooms (at most 20,000)")
		fs.StringVar(&cfg.open, "open", "/bench/open/room", "the room without a rule of its own")
		fs.StringVar(&cfg.ruled, "ruled", "/bench/ruled/room", "the room whose rule and group are set with RULES")
		fs.StringVar(&cfg.rule, "rule", "group:rs", "the rule of the ruled room; '' sets none (both rooms open: the noise of the comparison)")
		fs.IntVar(&cfg.groupSize, "group", 1000, "e-mails in the ruled room's group, the subscribers' last (1 to 1024)")
		fs.StringVar(&cfg.login, "login", "", "EMAIL:PASSWORD of a login record (reso -login): every subscriber's credentials")
		tokenFile := fs.String("admin-token-file", "", "file holding the administrator's token (reso admin-token): the publisher's cookies user_id=0 and token")
		fs.IntVar(&cfg.window, "window", 32, "NOTIFYs sent and not yet answered (1 to 1024)")
		fs.IntVar(&cfg.dataSize, "data", 100, "bytes of data in each NOTIFY (20 to 60,000)")
		fs.IntVar(&cfg.rounds, "rounds", 10, "measured rounds per room, alternating (1 to 20)")
		fs.DurationVar(&cfg.warmup, "warmup", 200*time.Millisecond, "publishing before each round's measurement (at most 10s)")
		fs.DurationVar(&cfg.dur, "d", 500*time.Millisecond, "measured time of one round (at most 10s)")
		fs.Int64Var(&cfg.maxSends, "max", 1_000_000, "most NOTIFYs in one round (at most 10,000,000)")
		fs.DurationVar(&cfg.drain, "drain", 10*time.Second, "wait for a round's last replies and notifications (at most 1m)")
		checks = append(checks,
			func() error { return inRange("s", cfg.subs, 1, 20_000) },
			func() error { return inRange("group", cfg.groupSize, 1, 1024) },
			func() error { return inRange("window", cfg.window, 1, 1024) },
			func() error { return inRange("data", cfg.dataSize, 20, 60_000) },
			func() error { return inRange("rounds", cfg.rounds, 1, 20) },
			func() error { return durRange("warmup", cfg.warmup, 0, 10*time.Second) },
			func() error { return durRange("d", cfg.dur, 100*time.Millisecond, 10*time.Second) },
			func() error { return inRange("max", int(cfg.maxSends), 1, 10_000_000) },
			func() error { return durRange("drain", cfg.drain, 0, time.Minute) },
			func() error {
				if _, _, ok := strings.Cut(cfg.login, ":"); !ok || strings.HasPrefix(cfg.login, ":") {
					return errors.New("-login EMAIL:PASSWORD is required")
				}
				return nil
			},
			func() error {
				if cfg.open == cfg.ruled || !strings.HasPrefix(cfg.open, "/") || !strings.HasPrefix(cfg.ruled, "/") {
					return errors.New("-open and -ruled: want two different paths")
				}
				return nil
			},
			func() error {
				if *tokenFile == "" {
					return errors.New("-admin-token-file is required (the publisher is the administrator)")
				}
				b, err := os.ReadFile(*tokenFile)
				cfg.adminToken = strings.TrimSpace(string(b))
				if err == nil && cfg.adminToken == "" {
					err = errors.New("empty")
				}
				if err != nil {
					return fmt.Errorf("-admin-token-file: %w", err)
				}
				return nil
			})
		do = func(d *dialer, p *probe) error {
			cfg.dialConc, cfg.timeout, cfg.readBuf = *dialConc, *timeout, *readBuf
			res, err := runRules(d, p, cfg)
			if err != nil {
				return err
			}
			res.print(os.Stdout, cfg)
			return res.check(cfg)
		}
	default:
		return fmt.Errorf("unknown command %q: want idle, fanout, channels, writes, hygiene, rules or soak", cmd)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", cmd, fs.Args())
	}
	if *wsURL == "" {
		return fmt.Errorf("%s: -url is required", cmd)
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	urls := strings.Split(*wsURL, ",")
	pids, debugs := list(*pid), list(*debug)
	if len(pids) > 0 && len(pids) != len(urls) || len(debugs) > 0 && len(debugs) != len(urls) {
		return fmt.Errorf("%s: -pid and -debug: want one per -url (%d)", cmd, len(urls))
	}
	if doMany == nil && len(urls) > 1 {
		return fmt.Errorf("%s: -url: want one server", cmd)
	}
	var ds []*dialer
	var ps []*probe
	for i, u := range urls {
		d, err := newDialer(u, *readBuf)
		if err != nil {
			return err
		}
		p, dbg := 0, ""
		if len(pids) > 0 {
			if p, err = strconv.Atoi(pids[i]); err != nil || p < 0 {
				return fmt.Errorf("%s: -pid %q: want a process id", cmd, pids[i])
			}
		}
		if len(debugs) > 0 {
			dbg = debugs[i]
		}
		ds, ps = append(ds, d), append(ps, newProbe(p, dbg))
	}
	if doMany != nil {
		return doMany(ds, ps)
	}
	return do(ds[0], ps[0])
}

// list splits a comma-separated flag value; empty gives none.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func inRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s %d: want %d to %d", name, v, lo, hi)
	}
	return nil
}

func durRange(name string, v, lo, hi time.Duration) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s %v: want %v to %v", name, v, lo, hi)
	}
	return nil
}
