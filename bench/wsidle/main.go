// Command wsidle measures the memory a WebSocket server spends per idle
// connection. It runs in one of two roles, each its own process:
//
//	wsidle server -lib gorilla|coder|transport [-addr 127.0.0.1:0]
//	wsidle client -addr HOST:PORT -n N [-c 200] [-hold 60s]
//
// The server echoes every message it receives and prints "wsidle listening
// addr=HOST:PORT"; on SIGUSR1 it collects garbage, returns free memory to
// the system and prints its goroutine count and heap figures, so that the
// caller can read a steady-state RSS from /proc. The client opens N
// connections (at most 10,000), sends one small text message on each and
// waits for its echo, prints "ready ok=N failed=F", then holds the
// connections idle until its standard input closes or -hold passes.
// bench/wsidle.sh drives both and prints kilobytes per connection.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wsidle server|client [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = serve(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	default:
		err = fmt.Errorf("unknown role %q: want server or client", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsidle:", err)
		os.Exit(1)
	}
}
