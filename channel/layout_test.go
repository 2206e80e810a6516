package channel

import (
	"testing"
	"unsafe"
)

// TestLayout holds the sizes every node of a fleet pays for every
// connection's transient entity (docs/fleet.md §13): a node of 96 bytes
// and a ghost of 24, each a size class of Go's allocator, so that a
// field added to either shows here before it shows in a fleet's memory.
func TestLayout(t *testing.T) {
	if got := unsafe.Sizeof(node{}); got > 96 {
		t.Errorf("a node is %d bytes, above 96", got)
	}
	if got := unsafe.Sizeof(connection{}); got > 24 {
		t.Errorf("a connection is %d bytes, above 24", got)
	}
	// The history holds 50,000 entries by default, on every node.
	if got := unsafe.Sizeof(histEntry{}); got > 96 {
		t.Errorf("an entry of the history is %d bytes, above 96", got)
	}
}
