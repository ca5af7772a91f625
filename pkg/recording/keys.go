// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package recording

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ManifestKeys sign and verify what a recording's writer vouches for (its
// manifest, and while it runs that it is live) with HMAC-SHA256: a store
// writer without the key cannot forge either. The first key signs, every
// key verifies, so that a key is rotated by putting a new one first and
// removing the old one once the recordings it signed are past retention.
type ManifestKeys struct {
	keys []manifestKey
}

type manifestKey struct {
	id     string
	secret []byte
}

// minKeyBytes is the shortest key accepted: HMAC-SHA256's block of
// security, 256 bits.
const minKeyBytes = 32

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)

// ParseManifestKeys reads keys, one a line: an id and the base64 of at
// least 32 random bytes, separated by white space; blank lines and lines
// starting with # are skipped. Errors name the line, never its key.
func ParseManifestKeys(data []byte) (*ManifestKeys, error) {
	k := &ManifestKeys{}
	if err := k.add(data, "line"); err != nil {
		return nil, err
	}
	if len(k.keys) == 0 {
		return nil, errors.New("no key")
	}
	return k, nil
}

func (k *ManifestKeys) add(data []byte, where string) error {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !keyIDPattern.MatchString(fields[0]) {
			return fmt.Errorf("%s %d: want an id ([A-Za-z0-9._-], at most 63) and a base64 key", where, n)
		}
		secret, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil || len(secret) < minKeyBytes {
			return fmt.Errorf("%s %d (key %q): the key must be the base64 of at least %d bytes", where, n, fields[0], minKeyBytes)
		}
		for _, have := range k.keys {
			if have.id == fields[0] {
				return fmt.Errorf("%s %d: key %q is given twice", where, n, fields[0])
			}
		}
		k.keys = append(k.keys, manifestKey{id: fields[0], secret: secret})
	}
	return scanner.Err()
}

// LoadManifestKeys reads the keys of files, in their order: the first key
// of the first file signs.
func LoadManifestKeys(files ...string) (*ManifestKeys, error) {
	k := &ManifestKeys{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("manifest keys: %w", err)
		}
		if err := k.add(data, file+": line"); err != nil {
			return nil, fmt.Errorf("manifest keys: %w", err)
		}
	}
	if len(k.keys) == 0 {
		return nil, fmt.Errorf("manifest keys: no key in %v", files)
	}
	return k, nil
}

// EnsureManifestKeyFile writes a new key file at path (0600) unless one is
// there: the key of a single replica that is given none.
func EnsureManifestKeyFile(path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(NewManifestKeyLine(time.Now()))
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// NewManifestKeyLine returns a line of a key file with a new random key,
// named by the day it was made.
func NewManifestKeyLine(now time.Time) string {
	secret := make([]byte, minKeyBytes)
	_, _ = rand.Read(secret)
	return fmt.Sprintf("%s %s\n", now.UTC().Format("20060102-150405"), base64.StdEncoding.EncodeToString(secret))
}

// sign returns the id of the signing key and the MAC of data.
func (k *ManifestKeys) sign(data []byte) (id, mac string) {
	if k == nil || len(k.keys) == 0 {
		return "", ""
	}
	return k.keys[0].id, hex.EncodeToString(macOf(k.keys[0].secret, data))
}

// Errors of verify.
var (
	errUnsigned   = errors.New("it is not signed")
	errUnknownKey = errors.New("it is signed with a key this server does not hold")
	errBadMAC     = errors.New("its signature does not match")
)

// verify checks the MAC of data under key id, in constant time.
func (k *ManifestKeys) verify(id, mac string, data []byte) error {
	if id == "" || mac == "" {
		return errUnsigned
	}
	if k == nil {
		return errUnknownKey
	}
	for _, key := range k.keys {
		if key.id != id {
			continue
		}
		got, err := hex.DecodeString(mac)
		if err != nil || !hmac.Equal(got, macOf(key.secret, data)) {
			return errBadMAC
		}
		return nil
	}
	return errUnknownKey
}

func macOf(secret, data []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(data)
	return m.Sum(nil)
}
