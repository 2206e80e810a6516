package main

import (
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/websocket"
)

// transportEcho is reso's session transport (websocket) with its
// defaults but for the connection cap: pings and read deadlines on.
func transportEcho(max int) http.Handler {
	tr := websocket.New(websocket.Options{MaxConnections: max})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := tr.Accept(w, r, "bench")
		if err != nil {
			core.WriteError(w, r, err)
			return
		}
		ctx := r.Context()
		defer s.Close(core.CloseNormal, "")
		for {
			m, err := s.Recv(ctx)
			if err != nil {
				return
			}
			if err := s.Send(ctx, m); err != nil {
				return
			}
		}
	})
}
