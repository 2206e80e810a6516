package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// RSSKB is the resident set (VmRSS) of the process pid in KiB, summed
// over the process and its descendants (plugin processes with reso
// -isolate).
func RSSKB(pid int) (int64, error) {
	total, err := StatusKB(pid, "VmRSS:")
	if err != nil {
		return 0, err
	}
	for _, c := range Descendants(pid) {
		if n, err := StatusKB(c, "VmRSS:"); err == nil {
			total += n
		}
	}
	return total, nil
}

// FDs is the count of open file descriptors of the process pid and its
// descendants, from /proc/PID/fd.
func FDs(pid int) (int64, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0, err
	}
	total := int64(len(ents))
	for _, c := range Descendants(pid) {
		if ents, err := os.ReadDir("/proc/" + strconv.Itoa(c) + "/fd"); err == nil {
			total += int64(len(ents))
		}
	}
	return total, nil
}

// Descendants lists the processes under pid, from
// /proc/PID/task/*/children (empty where the kernel does not provide it).
func Descendants(pid int) []int { return descendants(pid, 0) }

func descendants(pid, depth int) []int {
	if depth > 8 {
		return nil
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c, depth+1)...)
			}
		}
	}
	return out
}

// StatusKB reads one "Name: N kB" line of /proc/PID/status; field is its
// name with the colon, e.g. "VmRSS:".
func StatusKB(pid int, field string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// Goroutines reads go_goroutines from the metrics of reso's admin
// listener at admin (http://HOST:PORT) with c.
func Goroutines(c *http.Client, admin string) (int64, error) {
	resp, err := c.Get(admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", admin, resp.Status)
	}
	s := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "go_goroutines "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return int64(v), err
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(admin + "/metrics: no go_goroutines")
}
