package core

// A RouterOption changes how [NewRouter] builds a router.
type RouterOption func(*routerOptions)

type routerOptions struct {
	routeList bool
}

// WithRouteList makes the router list its route forms in the body of its
// 404 Not Found answer, after the status line, one per line in table order
// (docs/wire.md#no-matching-route), as the example application does.
//
// Without it the body is the status line alone, "404 Not Found\n", like
// every other error body: a router serving someone else's site does not
// tell clients its table.
func WithRouteList() RouterOption {
	return func(o *routerOptions) { o.routeList = true }
}
