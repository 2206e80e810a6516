package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/gorilla/securecookie"
)

// secretKeyLen is the number of random bytes of a new instance secret.
const secretKeyLen = 32

// LoadSecret returns the instance secret kept in the file at path: its
// content without surrounding white space. A missing file is created with
// mode 0600 holding a new random key (hex text from
// securecookie.GenerateRandomKey). An empty path gives a random secret that
// lasts as long as the process. An empty file is an error.
func LoadSecret(path string) ([]byte, error) {
	if path == "" {
		return newSecret()
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = createSecret(path)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: secret file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("auth: secret file %s is empty", path)
	}
	return b, nil
}

func newSecret() ([]byte, error) {
	key := securecookie.GenerateRandomKey(secretKeyLen)
	if key == nil {
		return nil, errors.New("auth: no random key from the system")
	}
	return []byte(hex.EncodeToString(key)), nil
}

// createSecret writes a new secret to path; when another process created the
// file first, it reads that one.
func createSecret(path string) ([]byte, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	_, err = f.Write(append(secret, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return secret, nil
}
