package storage

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// validateKey enforces what both dialects can store and compare the same way:
// PostgreSQL TEXT rejects NUL and invalid UTF-8, so the store rejects them for
// SQLite too rather than let the two disagree. Keys start with "/" (all
// Kubernetes keys do), which also gives the empty prefix a finite range end.
func validateKey(key string, maxBytes int) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > maxBytes:
		return fmt.Errorf("%w: key of %d bytes exceeds the limit of %d", ErrInvalidKey, len(key), maxBytes)
	case key[0] != '/':
		return fmt.Errorf("%w: key %q does not start with /", ErrInvalidKey, key)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key %q contains a NUL byte", ErrInvalidKey, key)
	}
	return nil
}

// validatePrefix accepts "" (everything) or what validateKey accepts.
func validatePrefix(prefix string, maxBytes int) error {
	if prefix == "" {
		return nil
	}
	return validateKey(prefix, maxBytes)
}

// prefixRange returns [lo, hi) such that lo <= k < hi exactly for the valid
// keys k that start with prefix. hi is valid UTF-8 (PostgreSQL TEXT needs it):
// it is the prefix with its last rune incremented.
func prefixRange(prefix string) (lo, hi string) {
	if prefix == "" {
		return "", "0" // every key starts with "/", and "0" is "/"+1
	}
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		r := runes[i] + 1
		if r == 0xD800 {
			r = 0xE000 // skip the surrogate range, which UTF-8 cannot encode
		}
		if r <= utf8.MaxRune {
			runes[i] = r
			return prefix, string(runes[:i+1])
		}
	}
	// Every rune is U+10FFFF: nothing valid sorts after the prefix's range
	// start except keys under it; "\U0010FFFF" repeated is the bound.
	return prefix, prefix + string(utf8.MaxRune)
}
