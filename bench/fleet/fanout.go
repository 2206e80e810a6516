package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// fanResult is what one fan-out run measured.
type fanResult struct {
	published float64 // NOTIFYs per second
	rate      float64 // deliveries per second
	delivered int
	p50, p99  time.Duration
	missing   int
	slow      int // subscribers the server disconnected as slow consumers (1008)
}

func (r fanResult) String() string {
	return fmt.Sprintf("%.0f NOTIFY/s, %.0f deliveries/s, p50 %v, p99 %v, missing %d (subscribers cut as slow consumers: %d)",
		r.published, r.rate, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.missing, r.slow)
}

// fanout subscribes subs connections spread over addrs to one path and
// NOTIFYs it from a connection to addrs[0] for d, each notification
// carrying its send time; it measures the time to each delivery. With
// rate > 0 the NOTIFYs go at that rate, not waiting for their replies;
// with rate 0 one is in flight at a time: the next goes when the reply
// to the previous one is in.
func fanout(addrs []string, subs, rate int, d time.Duration) (fanResult, error) {
	p := fmt.Sprintf("/fan%d", runID.Add(1))
	var mu sync.Mutex
	var lat []time.Duration
	var slow atomic.Int64
	var wg sync.WaitGroup
	var cs []*websocket.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := range subs {
		c, err := dial(addrs[i%len(addrs)])
		if err != nil {
			return fanResult{}, err
		}
		cs = append(cs, c)
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+p+`","msg_id":1}`)); err != nil {
			return fanResult{}, err
		}
		if _, _, err := c.ReadMessage(); err != nil {
			return fanResult{}, err
		}
	}
	timeRe := regexp.MustCompile(`"t":(\d+)`)
	for _, c := range cs {
		wg.Go(func() {
			var mine []time.Duration
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					if websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
						slow.Add(1)
					}
					break
				}
				if m := timeRe.FindSubmatch(data); m != nil {
					ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
					mine = append(mine, time.Since(time.Unix(0, ns)))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	pub, err := dial(addrs[0])
	if err != nil {
		return fanResult{}, err
	}
	defer pub.Close()
	sent, elapsed, err := publish(pub, p, rate, d)
	if err != nil {
		return fanResult{}, err
	}
	time.Sleep(2 * time.Second) // the last deliveries
	for _, c := range cs {
		c.Close()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := fanResult{
		published: float64(sent) / elapsed.Seconds(),
		rate:      float64(len(lat)) / elapsed.Seconds(),
		delivered: len(lat),
		missing:   sent*subs - len(lat),
		slow:      int(slow.Load()),
	}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r, nil
}

// publish sends NOTIFYs of about 100 bytes to path on pub for d, at rate
// a second (the replies read and dropped meanwhile), or with rate 0 each
// after the reply to the one before; it returns how many it sent and
// over what time.
func publish(pub *websocket.Conn, path string, rate int, d time.Duration) (int, time.Duration, error) {
	pad := strings.Repeat("x", 60)
	// Paced NOTIFYs carry no msg_id, so that no reply is due; the ones
	// in flight one at a time carry one, whose reply paces them.
	msg := func(i int) []byte {
		m := fmt.Appendf(nil, `{"method":"NOTIFY","resource":"%s","data":{"t":%d,"pad":"%s"}`, path, time.Now().UnixNano(), pad)
		if rate == 0 {
			m = fmt.Appendf(m, `,"msg_id":%d`, i)
		}
		return append(m, '}')
	}
	start := time.Now()
	sent := 0
	if rate == 0 {
		for time.Since(start) < d {
			if err := pub.WriteMessage(websocket.TextMessage, msg(sent)); err != nil {
				return sent, 0, err
			}
			sent++
			if _, _, err := pub.ReadMessage(); err != nil {
				return sent, 0, err
			}
		}
		return sent, time.Since(start), nil
	}
	go func() {
		for {
			if _, _, err := pub.ReadMessage(); err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for time.Since(start) < d {
		<-tick.C
		if err := pub.WriteMessage(websocket.TextMessage, msg(sent)); err != nil {
			return sent, 0, err
		}
		sent++
	}
	return sent, time.Since(start), nil
}
