package channel

// action is an operation that permissions rule on.
type action int

// The actions that permissions will rule on.
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
// Permissions are a later issue: until they are built, every
// operation is allowed.
func (t *Tree) permit(identity string, act action, path, creator string) bool {
	return true
}
