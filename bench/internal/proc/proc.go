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
	if pid <= 0 {
		return 0, 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime) * tick, time.Duration(stime) * tick
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
