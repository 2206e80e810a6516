// Package proc reads what the load clients of bench/ measure of a
// process from Linux's /proc.
package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU returns the user and system CPU time of the process pid, 0 when pid
// is not positive or its /proc/<pid>/stat cannot be read.
func CPU(pid int) time.Duration {
	user, sys := CPUSplit(pid)
	return user + sys
}

// CPUSplit returns the user and the system CPU time of the process pid
// (utime and stime of /proc/<pid>/stat), 0 when pid is not positive or
// the file cannot be read.
func CPUSplit(pid int) (user, sys time.Duration) {
	f := statFields(pid)
	if len(f) < 13 {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime) * tick, time.Duration(stime) * tick
}

// MinorFaults returns the minor page faults of the process pid so far
// (minflt of /proc/<pid>/stat: each a page the kernel found, zeroed and
// mapped, as for memory the process touches the first time), summed over
// the process and its descendants; 0 when pid is not positive or the file
// cannot be read.
func MinorFaults(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	var n int64
	for _, p := range append([]int{pid}, Descendants(pid)...) {
		if f := statFields(p); len(f) >= 8 {
			v, _ := strconv.ParseInt(f[7], 10, 64)
			n += v
		}
	}
	return n
}

// statFields returns the fields of /proc/<pid>/stat after the command
// name (f[0] is field 3, the state), nil when pid is not positive or the
// file cannot be read.
func statFields(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// TreeCPUSplit is CPUSplit summed over the process pid and its
// descendants (plugin processes with reso -isolate).
func TreeCPUSplit(pid int) (user, sys time.Duration) {
	user, sys = CPUSplit(pid)
	if pid <= 0 {
		return user, sys
	}
	for _, c := range Descendants(pid) {
		u, s := CPUSplit(c)
		user, sys = user+u, sys+s
	}
	return user, sys
}
