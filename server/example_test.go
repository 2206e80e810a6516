package server_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/server"
)

// New gives a handler's exact reason phrases to the wire; Shutdown runs the
// hooks registered for it (such as channelhost.Handler's GoAway) at once.
func ExampleNew() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		core.WriteError(w, r, core.Status(http.StatusNotFound, "Not Logged In"))
	})
	srv := server.New(h, server.Options{})
	wentAway := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(wentAway) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	if err := srv.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	<-wentAway
	fmt.Println("shut down")
	// Output:
	// 404 Not Logged In
	// shut down
}
