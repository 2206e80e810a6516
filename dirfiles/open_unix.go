//go:build unix

package dirfiles

import "syscall"

// Extra flags of the opens of the file plugin.
//
// A download opens without blocking (O_NONBLOCK: a FIFO that slipped past
// the type check answers at once instead of waiting for a writer) and never
// takes a terminal as the controlling one (O_NOCTTY). A listing opens only a
// directory (O_DIRECTORY: anything else fails at once, without opening it).
const (
	downloadFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
	listingFlags  = syscall.O_DIRECTORY | syscall.O_NONBLOCK | syscall.O_NOCTTY
)
