package plugins

import "context"

// Representation returns the plugin of the representation prefixes (routes 1
// and 2 of docs/wire.md#example-routes): /xml/<path> and /plain/<path>
// continue as the same method on /<path> with ACCEPT text/xml or text/plain,
// /json/<path> with ACCEPT application/json. These routes only rewrite;
// matching continues.
func Representation() Plugin {
	return PluginFunc(func(context.Context, Host) ([]Route, error) {
		return []Route{
			{
				Match:   "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)",
				Rewrite: "GET,PUT,POST /%(path)s",
				Assign:  []string{"ACCEPT=text/%(type)s"},
			},
			{
				Match:   "GET,PUT,POST /json/(?P<path>.*)",
				Rewrite: "GET,PUT,POST /%(path)s",
				Assign:  []string{"ACCEPT=application/json"},
			},
		}, nil
	})
}
