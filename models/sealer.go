package models

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// sealer encrypts account credentials at rest with AES-256-GCM under a key derived from
// HERALD_SECRET_KEY. Sealed values carry a version prefix so the scheme can change later.
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

func (s *sealer) seal(plain []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return sealPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, nil))
}

func (s *sealer) open(sealed string) ([]byte, error) {
	if len(sealed) < len(sealPrefix) || sealed[:len(sealPrefix)] != sealPrefix {
		return nil, errors.New("models: credentials: unknown format")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[len(sealPrefix):])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, errors.New("models: credentials: corrupt")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, fmt.Errorf("models: credentials: cannot decrypt (was HERALD_SECRET_KEY changed?): %w", err)
	}
	return plain, nil
}
