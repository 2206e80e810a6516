// Package pluginhost is the host runtime of reso's plugins: it turns an
// ordered list of plugins (package plugins holds their contract) into the
// router's route table, puts the authentication a route asks for in front
// of its handler, runs session routes on a session transport (package
// websocket), offers the services every plugin shares (settings, the
// resource tree) and closes the plugins at shutdown.
package pluginhost
