// Command rpcfloor measures the floor of a process boundary for an HTTP
// request: what the simplest possible peer pays when every request is
// forwarded over one multiplexed gRPC bidirectional stream to a child
// process, the shape of pluginrpc's Requests stream with nothing else (no
// headers, no authentication, no TLS, no batching of its own). It has three
// modes:
//
//	rpcfloor inproc [-addr 127.0.0.1:0]  # net/http answers GET /x itself
//	rpcfloor relay  [-addr 127.0.0.1:0]  # net/http forwards GET /x to a peer process
//	rpcfloor peer   -socket PATH         # the relay's child: answers every message at once
//
// inproc and relay print "rpcfloor listening addr=HOST:PORT" (relay adds
// "peer=PID") on stderr once they serve; both answer every path with the
// same body, the size of reso's answer to GET /users/0. The relay starts
// its peer itself, on a Unix socket in a private temporary directory, and
// ends it when it ends (on Linux the kernel kills the peer with the relay).
// bench/rpc-floor.sh runs both against reso compiled in and isolated.
package main

import (
	"flag"
	"fmt"
	"os"
)

// body is what every request is answered: the bytes reso answers GET
// /users/0 with (88 bytes).
var body = []byte(`{"result": {"username": "alice", "name": "Alice Example", "email": "alice@example.org"}}`)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	mode, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("rpcfloor "+mode, flag.ContinueOnError)
	var err error
	switch mode {
	case "inproc", "relay":
		addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
		if fs.Parse(args) != nil || fs.NArg() > 0 {
			usage()
		}
		if mode == "inproc" {
			err = serve(*addr, answer, "")
		} else {
			err = relay(*addr)
		}
	case "peer":
		socket := fs.String("socket", "", "Unix socket to listen on (required)")
		if fs.Parse(args) != nil || fs.NArg() > 0 || *socket == "" {
			usage()
		}
		err = peer(*socket)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rpcfloor %s: %v\n", mode, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: rpcfloor inproc|relay [-addr 127.0.0.1:0]\n       rpcfloor peer -socket PATH")
	os.Exit(2)
}
