// Package dirfiles opens and lists the files of a directory to serve them
// over HTTP, safely, for any plugin that serves files (the file listing and
// download of package files, the static files of package www):
//
//   - every open, stat and listing is confined to the directory with
//     os.Root: "..", encoded "..", and symbolic links never reach a file
//     outside it;
//   - the server's own state files (plugins.SettingHidden, given as a
//     [Setting]: the login database, its companions, the instance
//     secret) are never listed or opened, wherever they are and under
//     whatever name;
//   - only regular files are opened: a FIFO, socket or device answers 404
//     Not Found at once, without being opened;
//   - every file system operation, the reads of an opened file's content
//     included, is bounded in time and in number.
//
// It is a library plugins share, not a plugin: a bundled plugin imports it
// rather than another plugin.
package dirfiles
