// Package wsload holds what the bench programs that open many channel
// WebSockets share: a dialer that keeps an idle connection cheap for the
// load client, a clean close, and a bounded loop over many connections.
package wsload

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// dialer opens the WebSocket connections of the load: 1 KiB read
// buffers and one shared pool of write buffers, so that an idle
// connection costs the load client little (as bench/channel).
var dialer = websocket.Dialer{
	NetDial:          (&net.Dialer{Timeout: 10 * time.Second}).Dial,
	HandshakeTimeout: 10 * time.Second,
	ReadBufferSize:   1024,
	WriteBufferSize:  4096,
	WriteBufferPool:  &sync.Pool{},
}

// Dial opens a connection to the channel door of the node at addr, with an
// Origin of the same host, which the door accepts by default.
func Dial(addr string) (*websocket.Conn, error) {
	c, _, err := dialer.Dial("ws://"+addr+"/channel", http.Header{"Origin": {"http://" + addr}})
	return c, err
}

// CloseClean sends a normal close frame and closes the connection.
func CloseClean(c *websocket.Conn) {
	c.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.Close()
}

// ForEach calls f(0..n-1) with at most conc calls at once and returns the
// first error; after an error no new calls start.
func ForEach(n, conc int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(conc, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || i >= n
				mu.Unlock()
				if stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
