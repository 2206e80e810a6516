// Command hello-plugin is a third-party reso plugin (package hello): a program of its own,
// written only against reso's public plugin contract (packages core,
// plugins and pluginrpc). reso starts it as a child process and
// forwards the requests of its route to it over gRPC:
//
//	go build -o hello-plugin ./examples/hello-plugin
//	reso -plugin hello=./hello-plugin
//	curl localhost:8000/hello/Ada        # {"hello": "Ada"}
//
// It answers GET /hello with {"hello": "world"} and GET /hello/NAME with
// {"hello": "NAME"}, in JSON, XML or plain text like every reso resource, and
// GET /hello-whoami with the caller's e-mail, or "anonymous": a route with an
// optional identity. GET /hello-events/NAME streams three greetings:
// Server-Sent Events for a client that accepts text/event-stream, else one
// JSON line each:
//
//	curl -N -H 'Accept: text/event-stream' localhost:8000/hello-events/Ada
//
// See README.md beside this file.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/reso-project/reso/examples/hello-plugin/hello"
	"github.com/reso-project/reso/pluginrpc"
)

func main() {
	// Standard output belongs to the plugin handshake: log to stderr only.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := pluginrpc.Serve(hello.Plugin{Logger: logger}); err != nil {
		fmt.Fprintln(os.Stderr, "hello-plugin:", err)
		os.Exit(1)
	}
}
