package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// admin reads the nodes' admin listeners (-pprof, metrics).
var admin = http.Client{Timeout: time.Minute}

// get returns the body of the admin listener's path on node n.
func get(n *cluster.Node, path string) (io.ReadCloser, error) {
	resp, err := admin.Get("http://" + n.Admin + path)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s", n.Name, path, resp.Status)
	}
	return resp.Body, nil
}

// liveHeap returns node n's live heap: it has the node collect (its heap
// profile with gc=1) and then reads go_memstats_heap_alloc_bytes from its
// metrics.
func liveHeap(n *cluster.Node) (int64, error) {
	body, err := get(n, "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, body)
	body.Close()
	if body, err = get(n, "/metrics"); err != nil {
		return 0, err
	}
	defer body.Close()
	s := bufio.NewScanner(io.LimitReader(body, 16<<20))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "go_memstats_heap_alloc_bytes "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return int64(v), err
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(n.Name + " /metrics: no go_memstats_heap_alloc_bytes")
}

// saveHeap saves the heap profile of node n (after a collection) to file.
func saveHeap(n *cluster.Node, file string) error {
	body, err := get(n, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
