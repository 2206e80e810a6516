package app

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins/www"
)

// wwwOptions are the flags of the app's static files (plugin www).
type wwwOptions struct {
	dir    string
	prefix string
}

func wwwFlags(fs *flag.FlagSet, o *wwwOptions) {
	fs.StringVar(&o.dir, "www", "", "serve the static files of a web app from this directory under -www-prefix (default off; see docs/www.md)")
	fs.StringVar(&o.prefix, "www-prefix", www.DefaultPrefix, "path prefix of the -www files: /PATH/, or / for the whole server; a prefix that clashes with another plugin's routes stops the start")
}

// validate checks the directory and the prefix, and makes the directory
// absolute (an isolated plugin runs in a process of its own).
func (o *wwwOptions) validate() error {
	if err := www.CheckPrefix(o.prefix); err != nil {
		return usagef("-www-prefix %s: want a path that starts and ends with /, e.g. /app/", o.prefix)
	}
	if o.dir == "" {
		return nil
	}
	st, err := os.Stat(o.dir)
	switch {
	case err != nil:
		return usagef("-www %s: %s", o.dir, describe(err))
	case !st.IsDir():
		return usagef("-www %s: not a directory", o.dir)
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return usagef("-www %s: %s", o.dir, describe(err))
	}
	o.dir = abs
	return nil
}

// settings returns the host settings of the www plugin.
func (o *wwwOptions) settings() map[string]string {
	return map[string]string{www.SettingDir: o.dir, www.SettingPrefix: o.prefix}
}

// entries leaves the www plugin out of the bundled entries when -www is
// off, so that it costs nothing (no process with -isolate all). It stays
// in the list runPlugin serves from.
func (o *wwwOptions) entries(es []pluginhost.Entry) []pluginhost.Entry {
	if o.dir != "" {
		return es
	}
	return slices.DeleteFunc(es, func(e pluginhost.Entry) bool { return e.Name == "www" })
}

// checkTable refuses a route table in which the app's prefix clashes
// with another plugin's routes.
func (o *wwwOptions) checkTable(table []core.Route) error {
	if o.dir == "" {
		return nil
	}
	if err := www.Clash(table, o.prefix); err != nil {
		return fmt.Errorf("-www-prefix: %w", err)
	}
	return nil
}
