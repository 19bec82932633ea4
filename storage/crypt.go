package storage

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"strings"
)

// EncryptedPrefix marks the keys whose values are encrypted at rest.
const EncryptedPrefix = "/registry/secrets/"

// sealedMagic starts every encrypted value, so a reader can tell ciphertext
// from a value written before encryption was configured.
var sealedMagic = []byte("skiff:aes-gcm:v1:")

// sealer encrypts values with AES-256-GCM. The key name is the additional
// authenticated data: a ciphertext copied to another key fails to open.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("storage: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("storage: encryption key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func encrypted(key string) bool { return strings.HasPrefix(key, EncryptedPrefix) }

// seal returns the stored form of value for key.
func (s *sealer) seal(key string, value []byte) ([]byte, error) {
	if !encrypted(key) {
		return value, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("storage: nonce: %w", err)
	}
	out := make([]byte, 0, len(sealedMagic)+len(nonce)+len(value)+s.aead.Overhead())
	out = append(out, sealedMagic...)
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, value, []byte(key)), nil
}

// open returns the plain value of a stored value.
func (s *sealer) open(key string, stored []byte) ([]byte, error) {
	if !encrypted(key) || !bytes.HasPrefix(stored, sealedMagic) {
		return stored, nil
	}
	rest := stored[len(sealedMagic):]
	ns := s.aead.NonceSize()
	if len(rest) < ns {
		return nil, fmt.Errorf("storage: value of %s: truncated ciphertext", key)
	}
	plain, err := s.aead.Open(nil, rest[:ns], rest[ns:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("storage: value of %s cannot be decrypted (wrong encryption key?): %w", key, err)
	}
	return plain, nil
}
