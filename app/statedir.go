package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// stateDir returns the per-user directory that holds the server's own state
// by default (the login database, the instance secret):
// $XDG_STATE_HOME/reso when XDG_STATE_HOME is an absolute path, else
// ~/.local/state/reso. It never lies in the served directory unless someone
// serves their state directory on purpose, and even then the files plugin
// refuses to list or serve these files.
func stateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "reso"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state directory: %w (set XDG_STATE_HOME, or give -db and -secret-file)", err)
	}
	return filepath.Join(home, ".local", "state", "reso"), nil
}

// makeStateDir creates the state directory with mode 0700 when missing.
func makeStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory %s: %s", dir, describe(err))
	}
	return nil
}

// statePaths fills in the defaults of -db and -secret-file in the state
// directory, creating it only when a default is used.
func statePaths(db, secretFile *string) error {
	if *db != "" && *secretFile != "" {
		return nil
	}
	dir, err := stateDir()
	if err != nil {
		return err
	}
	if err := makeStateDir(dir); err != nil {
		return err
	}
	if *db == "" {
		*db = filepath.Join(dir, "reso.db")
	}
	if *secretFile == "" {
		*secretFile = filepath.Join(dir, "secret")
	}
	return nil
}

// createPrivate creates the file at path with mode 0600 when it is missing,
// so that SQLite (which gives its -wal and -shm files the mode of the
// database) never makes the login records readable by others.
func createPrivate(path string) error {
	if path == "" || path == ":memory:" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("-db %s: %s", path, describe(err))
	}
	return f.Close()
}
