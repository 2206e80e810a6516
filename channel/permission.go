package channel

// action is an operation that permissions (CHANNEL §6) rule on.
type action int

// The actions of CHANNEL §6.
const (
	actCreate    action = iota // PUT or POST of a new resource
	actRead                    // GET, and a stream
	actUpdate                  // PUT or partial PUT of an existing resource
	actDelete                  // DELETE
	actSubscribe               // SUBSCRIBE and NOTIFY
)

// permit reports whether identity ("" anonymous) may do act on the
// resource at path, whose creator is creator ("" when it has no entity or
// does not exist). It is the one place every operation of every door
// passes through, called with the tree's lock held.
//
// Permissions (CHANNEL §6) are a later issue: until they are built, every
// operation is allowed.
func (t *Tree) permit(identity string, act action, path, creator string) bool {
	return true
}
