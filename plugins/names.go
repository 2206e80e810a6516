package plugins

// Names of the shared settings the host offers every plugin (see [Services]).
const (
	// SettingDirectory holds the directory the example application serves
	// and configures (docs/wire.md#configuration): the config plugin reads
	// and changes it, the files plugin lists and serves files under it.
	SettingDirectory = "directory"
	// SettingHidden holds the absolute paths of the server's own state,
	// one per line: its files (the login database and its -wal, -shm and
	// -journal companions, the instance secret) and its state directory,
	// nothing in which is served. A plugin that serves files must never
	// list or serve any of them, wherever they are; it compares files and
	// directories by identity (device and inode), not by name, since a
	// path can be reached under other names (package files' Opener does).
	SettingHidden = "hidden"
)
