// Command custom is a reso binary of one's own: the reso server program
// (package app) with the bundled plugins and a third-party one, hello,
// compiled in. It takes every flag and subcommand of reso:
//
//	go build -o reso-custom ./examples/custom
//	./reso-custom -addr 127.0.0.1:8000
//	curl localhost:8000/hello/Ada        # {"hello": "Ada"}
//	./reso-custom -isolate hello         # hello in a child process of the same binary
package main

import (
	"github.com/reso-project/reso/app"
	"github.com/reso-project/reso/examples/hello-plugin/hello"
	"github.com/reso-project/reso/pluginhost"
)

func main() {
	app.Main(append(app.Bundled(), pluginhost.Entry{Name: "hello", Plugin: hello.Plugin{}})...)
}
