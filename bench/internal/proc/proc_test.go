package proc

import (
	"os"
	"syscall"
	"testing"
)

func TestMinorFaults(t *testing.T) {
	const pages = 256
	page := os.Getpagesize()
	b, err := syscall.Mmap(-1, 0, pages*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	// Small pages even where the kernel would give huge ones unasked.
	if err := syscall.Madvise(b, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	before := MinorFaults(os.Getpid())
	for i := 0; i < len(b); i += page {
		b[i] = 1 // the first touch of each page faults it in
	}
	if got := MinorFaults(os.Getpid()) - before; got < pages {
		t.Errorf("%d minor faults for %d fresh pages touched: want at least as many", got, pages)
	}
	if MinorFaults(0) != 0 || MinorFaults(-1) != 0 {
		t.Error("no pid: want 0")
	}
}

func TestCPUSplit(t *testing.T) {
	x := 0
	for u, _ := CPUSplit(os.Getpid()); u == 0; u, _ = CPUSplit(os.Getpid()) {
		for i := range 1_000_000 {
			x += i
		}
	}
	if u, s := CPUSplit(0); u != 0 || s != 0 {
		t.Errorf("no pid: %v %v, want 0", u, s)
	}
	_ = x
}
