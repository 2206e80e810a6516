package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// awaitReady waits until every node answers /readyz on its admin
// listener with 200, at most until deadline.
func awaitReady(nodes []*cluster.Node, deadline time.Time) error {
	for _, n := range nodes {
		for {
			resp, err := httpClient.Get("http://" + n.Admin + "/readyz")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready by the deadline (%v)", n.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// metric is the sum of the samples of the metric name (every label set)
// in the node's /metrics.
func metric(n *cluster.Node, name string) (float64, error) {
	resp, err := httpClient.Get("http://" + n.Admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", n.Admin, resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %s: %w", n.Admin, name, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s/metrics: no %s", n.Admin, name)
	}
	return sum, nil
}

// logMarks are the lines of a node's log that say the fleet took a node
// for dead or that a node rejoined.
var logMarks = []struct{ key, what string }{
	{"proposing its death", "deaths proposed"},
	{"took this node for dead", "rejoins"},
}

// logCounts counts, in every node's log, the lines of each of logMarks
// and the warnings and errors, and keeps the first of those lines.
type logCounts struct {
	marks  []int // per logMarks
	warns  int
	errors int
	first  []string
}

// readLogs counts what logMarks says in the logs of nodes.
func readLogs(nodes []*cluster.Node) (logCounts, error) {
	lc := logCounts{marks: make([]int, len(logMarks))}
	for _, n := range nodes {
		f, err := os.Open(n.Log)
		if err != nil {
			return lc, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			keep := false
			for i, m := range logMarks {
				if strings.Contains(line, m.key) {
					lc.marks[i]++
					keep = true
				}
			}
			switch {
			case strings.Contains(line, "level=WARN"):
				lc.warns++
				keep = true
			case strings.Contains(line, "level=ERROR"):
				lc.errors++
				keep = true
			}
			if keep && len(lc.first) < 5 {
				lc.first = append(lc.first, n.Name+": "+line)
			}
		}
		f.Close()
	}
	return lc, nil
}

func (lc logCounts) String() string {
	var parts []string
	for i, m := range logMarks {
		parts = append(parts, fmt.Sprintf("%s %d", m.what, lc.marks[i]))
	}
	s := strings.Join(parts, ", ") + fmt.Sprintf(", warnings %d, errors %d in the nodes' logs", lc.warns, lc.errors)
	for _, l := range lc.first {
		if len(l) > 300 {
			l = l[:300] + "..."
		}
		s += "\n    " + l
	}
	return s
}

// printTails writes the last lines of each node's log on stderr, and
// what readLogs found in them: what a failed measure leaves to look at
// (the logs go with the bench's directory).
func printTails(nodes []*cluster.Node, lines int) {
	for _, n := range nodes {
		b, err := os.ReadFile(n.Log)
		if err != nil {
			continue
		}
		ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		fmt.Fprintf(os.Stderr, "--- the end of %s's log:\n%s\n", n.Name, strings.Join(ls[max(len(ls)-lines, 0):], "\n"))
	}
	if lc, err := readLogs(nodes); err == nil {
		fmt.Fprintf(os.Stderr, "--- %s\n", lc)
	}
}
