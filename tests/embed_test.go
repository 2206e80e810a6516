package tests

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/reso-project/reso/internal/race"
)

// TestEmbedExample builds and runs examples/embed, a plain net/http server
// that mounts reso's authentication, the doors of a tree under
// /rt/channel and a resource of its own, and speaks to it over real
// connections: the HTTP door (Location as the client sees it), the
// WebSocket door (a notification of a change made through the HTTP door),
// a GET kept open, exact reason phrases, and a graceful shutdown that
// closes the WebSocket with 1001.
func TestEmbedExample(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "embed")
	build := exec.Command("go", append(append([]string{"build"}, race.BuildFlags()...), "-o", bin, "../examples/embed")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/embed: %v\n%s", err, out)
	}
	cmd := command(bin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(os.Stderr, errs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		raceFree(t, errs.String())
	}()
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	go func() { io.Copy(io.Discard, lines); exited <- cmd.Wait() }()
	base, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on ")
	if err != nil || !ok {
		t.Fatalf("first line %q: %v", first, err)
	}

	do := func(method, path, body string, ann bool, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ann {
			req.SetBasicAuth("ann@example.com", "secret")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// A resource of its own, behind auth.Required, with exact phrases.
	if resp, body := do("GET", "/rt/whoami", "", true); resp.Status != "200 OK" || body != `{"whoami": "ann@example.com"}` {
		t.Errorf("whoami as ann: %s %q", resp.Status, body)
	}
	if resp, body := do("GET", "/rt/whoami", "", false); resp.Status != "401 Unauthorized" || body != "401 Unauthorized\n" || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("whoami anonymous: %s %q", resp.Status, body)
	}

	// The WebSocket door follows /rooms/lobby.
	h := http.Header{}
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth("ann@example.com", "secret")
	h.Set("Authorization", r.Header.Get("Authorization"))
	ws, resp, err := gorilla.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(base, "http")+"/rt/channel", h)
	if err != nil {
		t.Fatalf("WebSocket: %v", err)
	}
	resp.Body.Close()
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	read := func() string {
		t.Helper()
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("WebSocket read: %v", err)
		}
		return string(data)
	}
	if err := ws.WriteMessage(gorilla.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"/rooms/lobby","msg_id":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := anyEpoch(read()); got != `{"msg_id":1,"code":"success","epoch":"E"}` {
		t.Fatalf("SUBSCRIBE: %s", got)
	}

	// The HTTP door: PUT, then POST whose Location is under /rt/channel.
	if resp, body := do("PUT", "/rt/channel/rooms/lobby", `{"topic":"hi"}`, true); resp.Status != "200 OK" {
		t.Fatalf("PUT: %s %s", resp.Status, body)
	}
	if got := read(); !strings.HasPrefix(got, `{"notify":"PUT","resource":"/rooms/lobby","type":"application/json","entity":{"topic":"hi"},"from":"http-`) {
		t.Errorf("notification: %s", got)
	}
	resp, body := do("POST", "/rt/channel/rooms/lobby", `{"text":"hello"}`, true)
	location := resp.Header.Get("Location")
	if resp.Status != "201 Created" || !strings.HasPrefix(location, "/rt/channel/rooms/lobby/") {
		t.Fatalf("POST: %s, Location %q, %s", resp.Status, location, body)
	}
	if resp, body := do("GET", location, "", false); resp.Status != "200 OK" || body != `{"text":"hello"}` {
		t.Errorf("GET %s: %s %q", location, resp.Status, body)
	}
	if resp, body := do("GET", "/rt/channel/rooms/nowhere", "", false); resp.Status != "404 Not Found" || body != "404 Not Found\n" {
		t.Errorf("GET of nothing: %s %q", resp.Status, body)
	}

	// A GET kept open: the state first.
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/rt/channel/rooms/lobby?watch", nil)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := bufio.NewReader(stream.Body).ReadString('\n')
	if stream.Status != "200 OK" || !strings.Contains(state, `"entity":{"topic":"hi"}`) {
		t.Errorf("GET kept open: %s %q", stream.Status, state)
	}

	// Graceful shutdown: the WebSocket is closed with 1001 and the
	// program exits without an error, the GET kept open notwithstanding.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if !gorilla.IsCloseError(err, gorilla.CloseGoingAway) {
				t.Errorf("WebSocket at shutdown: %v", err)
			}
			break
		}
	}
	if err := <-exited; err != nil {
		t.Errorf("examples/embed at shutdown: %v", err)
	}
	cancel()
	stream.Body.Close()
}
