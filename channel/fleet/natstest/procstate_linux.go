package natstest

import (
	"os"
	"strconv"
	"strings"
)

// ProcState returns the state letter of process pid as /proc/<pid>/stat
// gives it ("R", "S", "T" when stopped, ...); "" when there is no such
// process.
func ProcState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces; the state follows its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// CanSeeState says whether ProcState tells the state of a process.
const CanSeeState = true
