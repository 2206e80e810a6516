//go:build !unix

package dirfiles

// Extra flags of the opens of the file plugin: none where opening a
// non-regular file by name does not block (see open_unix.go).
const (
	downloadFlags = 0
	listingFlags  = 0
)
