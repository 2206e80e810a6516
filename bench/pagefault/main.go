// Command pagefault measures what the machine charges for a page of fresh
// memory: it maps anonymous memory, writes one byte to each 4 KiB page
// (each write a minor page fault: the kernel finds, zeroes and maps a
// page) and prints the time per page, for a few rounds. A process whose
// heap grows (the tree of bench/channel-writes.sh's transient phase, which
// keeps every PUT) pays this for every page its heap grows by; read the
// server's faults per operation from /proc/PID/stat (minflt) to put the
// two together (docs/operations.md, transient PUTs against NOTIFY).
//
//	go run ./bench/pagefault [-mib 100] [-rounds 3]
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	mib := flag.Int("mib", 100, "MiB mapped and touched a round (1 to 4096)")
	rounds := flag.Int("rounds", 3, "rounds (1 to 100)")
	flag.Parse()
	if *mib < 1 || *mib > 4096 || *rounds < 1 || *rounds > 100 {
		fmt.Fprintln(os.Stderr, "pagefault: -mib is 1 to 4096, -rounds 1 to 100")
		os.Exit(2)
	}
	n := *mib << 20
	page := os.Getpagesize()
	for r := 1; r <= *rounds; r++ {
		b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pagefault:", err)
			os.Exit(1)
		}
		start := time.Now()
		for i := 0; i < n; i += page {
			b[i] = 1
		}
		d := time.Since(start)
		fmt.Printf("round %d: %d pages of %d bytes, %.2f µs a page\n", r, n/page, page, float64(d.Nanoseconds())/1e3/float64(n/page))
		if err := syscall.Munmap(b); err != nil {
			fmt.Fprintln(os.Stderr, "pagefault:", err)
			os.Exit(1)
		}
	}
}
