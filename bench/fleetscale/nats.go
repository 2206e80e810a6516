package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// natsServers is the size of the fleet's JetStream cluster.
const natsServers = 3

// varz is the part of a nats-server's /varz that the bench reads: the
// messages and bytes it took in and sent out, from clients and routes.
type varz struct {
	InMsgs   int64 `json:"in_msgs"`
	OutMsgs  int64 `json:"out_msgs"`
	InBytes  int64 `json:"in_bytes"`
	OutBytes int64 `json:"out_bytes"`
}

// sub is v less w, field by field.
func (v varz) sub(w varz) varz {
	return varz{v.InMsgs - w.InMsgs, v.OutMsgs - w.OutMsgs, v.InBytes - w.InBytes, v.OutBytes - w.OutBytes}
}

// scale is v with each field times f.
func (v varz) scale(f float64) varz {
	return varz{int64(float64(v.InMsgs) * f), int64(float64(v.OutMsgs) * f), int64(float64(v.InBytes) * f), int64(float64(v.OutBytes) * f)}
}

// httpClient reads the monitoring and metrics endpoints.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// readVarz sums /varz over every server of nc; nil nc is zero.
func readVarz(nc *natstest.Procs) (varz, error) {
	var sum varz
	if nc == nil {
		return sum, nil
	}
	for i := range natsServers {
		resp, err := httpClient.Get(nc.MonitorURL(i) + "/varz")
		if err != nil {
			return sum, err
		}
		var v varz
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			return sum, fmt.Errorf("%s/varz: %w", nc.MonitorURL(i), err)
		}
		sum.InMsgs += v.InMsgs
		sum.OutMsgs += v.OutMsgs
		sum.InBytes += v.InBytes
		sum.OutBytes += v.OutBytes
	}
	return sum, nil
}

// natsPids are the process ids of nc's servers; none for nil.
func natsPids(nc *natstest.Procs) []int {
	if nc == nil {
		return nil
	}
	var pids []int
	for i := range natsServers {
		pids = append(pids, nc.Pid(i))
	}
	return pids
}
