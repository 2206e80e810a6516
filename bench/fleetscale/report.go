package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// kib formats KiB.
func kib(v float64) string { return fmt.Sprintf("%.1f KiB", v) }

// mib formats KiB as MiB.
func mib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/1024) }

// sum adds vs.
func sum(vs []int64) int64 {
	var s int64
	for _, v := range vs {
		s += v
	}
	return s
}

// rssPerConn is the nodes' summed RSS per connection held, in KiB.
func (r phaseResult) rssPerConn() float64 {
	return float64(sum(r.rss)) / float64(max(sum(r.perNode), 1))
}

// growthPerConn is the nodes' summed RSS growth per connection, in KiB.
func (r phaseResult) growthPerConn() float64 {
	return float64(sum(r.rss)-sum(r.rssBase)) / float64(max(sum(r.perNode), 1))
}

// idleShare is the idle CPU over the NOTIFYs' window.
func (r phaseResult) idleShare() cpuSplit {
	if r.idleLen <= 0 {
		return cpuSplit{}
	}
	return r.idle.scale(float64(r.window) / float64(r.idleLen))
}

// perDelivery is c per delivery of the NOTIFYs.
func (r phaseResult) perDelivery(c cpuSplit) cpuSplit {
	return c.scale(1 / float64(max(r.received, 1)))
}

// netOK tells whether cpuNet means something: the idle CPU of no kind
// of process was above the NOTIFYs'.
func (r phaseResult) netOK() bool {
	n := r.cpuNet()
	return n.nodes >= 0 && n.nats >= 0 && n.clients >= 0
}

// cpuNet is the NOTIFYs' CPU with the idle CPU of as long taken off.
func (r phaseResult) cpuNet() cpuSplit { return r.cpu.sub(r.idleShare()) }

// natsNet is the NATS traffic of the NOTIFYs with the idle traffic of as
// long taken off.
func (r phaseResult) natsNet() varz {
	if r.idleLen <= 0 {
		return r.natsWin
	}
	return r.natsWin.sub(r.idleNATS.scale(float64(r.window) / float64(r.idleLen)))
}

// quantile is the q-quantile of ds (nearest rank), which it sorts.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// us formats a duration in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// core formats CPU time over a wall time as a share of one core.
func core(cpu, wall time.Duration) string {
	return fmt.Sprintf("%.0f%%", 100*float64(cpu)/float64(max(wall, 1)))
}

// print writes the phase's figures.
func (r phaseResult) print(w io.Writer, notifies int) {
	fleet := len(r.natsRSS) > 0
	fmt.Fprintf(w, "%s: %d WebSockets over %d node(s), from %d load client process(es)\n", r.name, r.conns, len(r.rss), r.procs)
	fmt.Fprintf(w, "  set up (connect, SUBSCRIBE the room, PUT a transient presence entry): %d of %d in %v (%.0f/s); failed attempts %d, given up %d\n",
		r.subscribed, r.conns, r.setup.Round(100*time.Millisecond), float64(r.subscribed)/r.setup.Seconds(), r.failures, r.unset)
	for _, e := range r.errors {
		fmt.Fprintf(w, "    %s\n", e)
	}
	var nodes []string
	for i, v := range r.rss {
		nodes = append(nodes, fmt.Sprintf("%s (%s / %d)", kib(float64(v)/float64(max(r.perNode[i], 1))), mib(v), r.perNode[i]))
	}
	fmt.Fprintf(w, "  RSS per connection: %s; all nodes %s (growth from before the connections %s)\n",
		strings.Join(nodes, ", "), kib(r.rssPerConn()), kib(r.growthPerConn()))
	if fleet {
		var ns []string
		for i, v := range r.natsRSS {
			ns = append(ns, fmt.Sprintf("%s (%+.1f)", mib(v), float64(v-r.natsBase[i])/1024))
		}
		fmt.Fprintf(w, "  NATS servers' RSS: %s\n", strings.Join(ns, ", "))
	}
	fmt.Fprintf(w, "  idle over %v: CPU nodes %s, NATS %s, clients %s of a core",
		r.idleLen.Round(100*time.Millisecond), core(r.idle.nodes, r.idleLen), core(r.idle.nats, r.idleLen), core(r.idle.clients, r.idleLen))
	if fleet {
		fmt.Fprintf(w, "; NATS %.0f msgs/s in, %.0f out", float64(r.idleNATS.InMsgs)/r.idleLen.Seconds(), float64(r.idleNATS.OutMsgs)/r.idleLen.Seconds())
	}
	fmt.Fprintln(w)
	lat := slices.Clone(r.latency)
	fmt.Fprintf(w, "  %d NOTIFYs to the room, one after another: publish to the last delivery p50 %v, p99 %v, max %v; deliveries %d of %d, missing %d, duplicated %d\n",
		notifies, quantile(lat, 0.5).Round(time.Millisecond), quantile(lat, 0.99).Round(time.Millisecond), quantile(lat, 1).Round(time.Millisecond),
		r.received, r.expected, r.expected-r.received, r.duplicates)
	if r.failedNotifies > 0 {
		fmt.Fprintf(w, "  NOTIFYs whose reply did not come (their deliveries not counted): %d\n", r.failedNotifies)
	}
	net, gross := r.perDelivery(r.cpuNet()), r.perDelivery(r.cpu)
	if !r.netOK() {
		fmt.Fprintf(w, "  CPU per delivery, every process summed: %s (nodes %s, NATS %s, clients %s), the idle CPU included (it was above the NOTIFYs' for a kind of process)\n",
			us(gross.total()), us(gross.nodes), us(gross.nats), us(gross.clients))
	} else {
		fmt.Fprintf(w, "  CPU per delivery, every process summed: %s (nodes %s, NATS %s, clients %s), the idle CPU of as long taken off; %s with it\n",
			us(net.total()), us(net.nodes), us(net.nats), us(net.clients), us(gross.total()))
	}
	if fleet {
		n := r.natsNet()
		f := 1 / float64(notifies)
		fmt.Fprintf(w, "  NATS per notification (3 servers summed, idle traffic taken off): in %.1f msgs / %.0f bytes, out %.1f msgs / %.0f bytes; %d nodes\n",
			float64(n.InMsgs)*f, float64(n.InBytes)*f, float64(n.OutMsgs)*f, float64(n.OutBytes)*f, len(r.rss))
		fmt.Fprintf(w, "  live nodes at the end, as each node sees it: %v\n", r.liveNodes)
	}
	fmt.Fprintf(w, "  connections dropped during the run: %d", r.dropped)
	for _, why := range r.dropWhy[:min(len(r.dropWhy), 3)] {
		fmt.Fprintf(w, "; %s", why)
	}
	fmt.Fprintf(w, "\n  %s\n", r.logs)
}

// printRatios writes the fleet's figures against the single node's.
func printRatios(w io.Writer, fleet, single phaseResult) {
	fl, sl := slices.Clone(fleet.latency), slices.Clone(single.latency)
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }
	servers := func(c cpuSplit) time.Duration { return c.nodes + c.nats }
	fn, sn := fleet.perDelivery(fleet.cpuNet()), single.perDelivery(single.cpuNet())
	fmt.Fprintf(w, "fleet (%d over %d nodes) against the single node (%d), the fleet's over the single node's:\n", fleet.conns, len(fleet.rss), single.conns)
	fmt.Fprintf(w, "  RSS per connection %.2f (growth from before the connections %.2f)\n",
		fleet.rssPerConn()/single.rssPerConn(), fleet.growthPerConn()/single.growthPerConn())
	net := "n/a (the idle CPU above the NOTIFYs')"
	if fleet.netOK() && single.netOK() {
		net = fmt.Sprintf("%.2f, every process (load clients too) %.2f", ratio(servers(fn), servers(sn)), ratio(fn.total(), sn.total()))
	}
	fmt.Fprintf(w, "  CPU per delivery, the idle CPU taken off: nodes and NATS %s; with the idle CPU: nodes and NATS %.2f, every process %.2f\n",
		net, ratio(servers(fleet.perDelivery(fleet.cpu)), servers(single.perDelivery(single.cpu))),
		ratio(fleet.perDelivery(fleet.cpu).total(), single.perDelivery(single.cpu).total()))
	fmt.Fprintf(w, "  publish to the last delivery: p50 %v against %v, max %v against %v\n",
		quantile(fl, 0.5).Round(time.Millisecond), quantile(sl, 0.5).Round(time.Millisecond),
		quantile(fl, 1).Round(time.Millisecond), quantile(sl, 1).Round(time.Millisecond))
}
