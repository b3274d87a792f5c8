package models

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// sealer encrypts account credentials at rest with AES-256-GCM under a key derived from
// HERALD_SECRET_KEY. Sealed values carry a version prefix so the scheme can change later.
// The associated data names the row and field a value belongs to (see sealedFor), so a
// value copied into another account, or another field, does not open.
type sealer struct{ aead cipher.AEAD }

const sealPrefix = "v1:"

func newSealer(secret []byte) *sealer {
	key := sha256.Sum256(append([]byte("herald credentials v1\x00"), secret...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key cannot fail
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &sealer{aead: aead}
}

// sealedFor is the associated data binding a sealed value to one field of one account.
// Values sealed before binding existed have none (nil).
func sealedFor(accountID int64, field string) []byte {
	return []byte("account " + strconv.FormatInt(accountID, 10) + " " + field)
}

func (s *sealer) seal(plain, associated []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return sealPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, associated))
}

func (s *sealer) open(sealed string, associated []byte) ([]byte, error) {
	if len(sealed) < len(sealPrefix) || sealed[:len(sealPrefix)] != sealPrefix {
		return nil, errors.New("models: credentials: unknown format")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[len(sealPrefix):])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, errors.New("models: credentials: corrupt")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], associated)
	if err != nil {
		return nil, fmt.Errorf("models: credentials: cannot decrypt (was HERALD_SECRET_KEY changed, or the value copied from another account?): %w", err)
	}
	return plain, nil
}
