package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/internal/race"
)

// Bounds of TestIdleMemory, per idle WebSocket, with a margin above what it
// measures (3277 B of heap, the same from run to run, and 4 KiB of stack:
// one goroutine, reading). Each of what an idle session once kept is more
// than the heap's margin: core.Listen's wrapper of the connection and the
// router's request slot (540 B), a watch on the session's context while it
// reads (500 B), net/http's buffers of the connection (8 KiB). A session
// goroutine whose stack stayed at 8 KiB, as it does when the tree's work
// runs on it, would pass the stack bound for fewer than a quarter of the
// connections, and a second goroutine per connection (a writer waiting)
// would pass the goroutines' bound for fewer than a tenth.
const (
	maxIdleHeap       = 3584
	maxIdleStack      = 5 << 10
	maxIdleGoroutines = 1.1
)

// idleConns is the number of connections of TestIdleMemory.
const idleConns = 2000

// TestIdleMemory runs the server in this process, with the admin listener
// (and so the metrics) on, opens idleConns WebSockets to it from a child
// process, each subscribed to a resource of its own, and bounds the live
// heap and the goroutine stacks each adds. Memory, unlike time, is steady
// enough on a shared machine to bound. bench/channel-idle.sh measures the
// same over 10,000 connections with the server's RSS.
func TestIdleMemory(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes what allocations and stacks cost")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	addr, served := startInProcess(t, ctx, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0",
		"-db", filepath.Join(dir, "reso.db"), "-secret-file", filepath.Join(dir, "secret"), "-directory", dir)
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	}()

	baseHeap, baseStack, baseGoroutines := memoryNow()
	client := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestIdleClient$")
	client.Env = append(os.Environ(), "RESO_IDLE_CLIENT="+addr, "RESO_IDLE_CONNS="+strconv.Itoa(idleConns))
	stdin, err := client.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the client closes its connections and exits
		if err := client.Wait(); err != nil {
			t.Errorf("client: %v", err)
		}
	}()
	out := bufio.NewScanner(stdout)
	ready := false
	for !ready && out.Scan() {
		ready = out.Text() == "ready"
	}
	if !ready {
		t.Fatal("the client did not open its connections")
	}
	go io.Copy(io.Discard, stdout)
	// The goroutines that wrote the replies end once written: wait for
	// them (the client has read every reply), not for a fixed time.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > baseGoroutines+idleConns+50 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	heap, stack, goroutines := memoryNow()
	perHeap := (float64(heap) - float64(baseHeap)) / idleConns
	perStack := (float64(stack) - float64(baseStack)) / idleConns
	t.Logf("%d idle WebSockets: heap %.0f B, stacks %.0f B, goroutines %.2f per connection",
		idleConns, perHeap, perStack, float64(goroutines-baseGoroutines)/idleConns)
	if perHeap > maxIdleHeap {
		t.Errorf("live heap %.0f B per idle connection, want at most %d", perHeap, maxIdleHeap)
	}
	if perStack > maxIdleStack {
		t.Errorf("goroutine stacks %.0f B per idle connection, want at most %d", perStack, maxIdleStack)
	}
	if perG := float64(goroutines-baseGoroutines) / idleConns; perG > maxIdleGoroutines {
		t.Errorf("%.2f goroutines per idle connection, want at most %.1f", perG, maxIdleGoroutines)
	}
}

// memoryNow returns the live heap and the stacks in use, after two
// collections (the second empties what sync.Pools kept from the first),
// and the goroutines.
func memoryNow() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}

// startInProcess runs the server with args in this process until ctx ends
// and returns its address once it listens, and the channel run's error
// comes on.
func startInProcess(t *testing.T, ctx context.Context, args ...string) (addr string, served <-chan error) {
	t.Helper()
	logs, logw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, strings.NewReader(""), io.Discard, logw, Bundled())
		logw.Close()
		done <- err
	}()
	found := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(logs)
		for s.Scan() {
			if _, rest, ok := strings.Cut(s.Text(), `msg="reso listening" addr=`); ok {
				a, _, _ := strings.Cut(rest, " ")
				select {
				case found <- a:
				default:
				}
			}
		}
		io.Copy(io.Discard, logs)
	}()
	select {
	case addr = <-found:
		return addr, done
	case err := <-done:
		t.Fatalf("the server ended before it listened: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the server did not start listening")
	}
	return "", nil
}

// TestIdleClient is the client process of TestIdleMemory, which starts it
// with RESO_IDLE_CLIENT set to the server's address: it opens
// RESO_IDLE_CONNS WebSockets, subscribes each to /idle/c<i>, prints
// "ready" and holds them until its standard input ends.
func TestIdleClient(t *testing.T) {
	addr := os.Getenv("RESO_IDLE_CLIENT")
	if addr == "" {
		t.Skip("the client process of TestIdleMemory")
	}
	n, err := strconv.Atoi(os.Getenv("RESO_IDLE_CONNS"))
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{ReadBufferSize: 256, WriteBufferSize: 256, HandshakeTimeout: time.Minute}
	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				c, err := subscribe(&d, addr, i)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Read on, so that pings are answered.
	for _, c := range conns {
		go func() {
			for {
				if _, _, err := c.NextReader(); err != nil {
					return
				}
			}
		}()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// subscribe opens a WebSocket to the channel and subscribes to /idle/c<i>.
func subscribe(d *websocket.Dialer, addr string, i int) (*websocket.Conn, error) {
	c, _, err := d.Dial("ws://"+addr+"/channel", nil)
	if err != nil {
		return nil, fmt.Errorf("connection %d: %w", i, err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	msg := fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/idle/c%d","msg_id":1}`, i)
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return nil, fmt.Errorf("connection %d: %w", i, err)
	}
	_, reply, err := c.ReadMessage()
	if err != nil {
		return nil, fmt.Errorf("connection %d: %w", i, err)
	}
	if want := `^\{"msg_id":1,"code":"success","epoch":"[0-9a-z]{1,32}"\}$`; !regexp.MustCompile(want).Match(reply) {
		return nil, fmt.Errorf("connection %d: reply %s, want %s", i, reply, want)
	}
	c.SetReadDeadline(time.Time{})
	return c, nil
}
