package kernel

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// Sealer encrypts credentials at rest (accounts' settings, callback secrets) with AES-256-GCM under a key derived from
// HERALD_SECRET_KEY. Sealed values carry a version prefix so the scheme can change later.
// The associated data names the row and field a value belongs to, so a
// value copied into another account, or another field, does not open.
//
// While the key is rotated, the sealer also holds the previous key
// (HERALD_SECRET_KEY_PREVIOUS): it seals with the current key only, and opens with the
// current key, then the previous one.
type Sealer struct {
	aead     cipher.AEAD
	previous cipher.AEAD // nil when no previous key is set
}

const sealPrefix = "v1:"

// ErrUnreadable means sealed credentials open with none of the keys Herald holds:
// HERALD_SECRET_KEY changed without HERALD_SECRET_KEY_PREVIOUS, or the value was copied
// from another row. They must be entered again.
var ErrUnreadable = Declare(DomainError{Kind: KindConflict, Code: "account_unreadable", Key: "compose.check.account_unreadable",
	Text: "credentials cannot be decrypted"})

func newSealer(secret, previous []byte) *Sealer {
	s := &Sealer{aead: newAEAD(secret)}
	if len(previous) > 0 {
		s.previous = newAEAD(previous)
	}
	return s
}

func newAEAD(secret []byte) cipher.AEAD {
	key := sha256.Sum256(append([]byte("herald credentials v1\x00"), secret...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key cannot fail
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// Seal encrypts plain with the current key, bound to associated.
func (s *Sealer) Seal(plain, associated []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return sealPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, associated))
}

// Open opens a sealed value with either key.
func (s *Sealer) Open(sealed string, associated []byte) ([]byte, error) {
	plain, _, err := s.OpenAny(sealed, associated)
	return plain, err
}

// OpenAny opens a sealed value with the current key, then the previous one; stale
// reports that only the previous key opened it, so it should be sealed again.
func (s *Sealer) OpenAny(sealed string, associated []byte) (plain []byte, stale bool, err error) {
	if len(sealed) < len(sealPrefix) || sealed[:len(sealPrefix)] != sealPrefix {
		return nil, false, fmt.Errorf("kernel: credentials: unknown format: %w", ErrUnreadable)
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[len(sealPrefix):])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, false, fmt.Errorf("kernel: credentials: corrupt: %w", ErrUnreadable)
	}
	n := s.aead.NonceSize()
	if plain, err = s.aead.Open(nil, raw[:n], raw[n:], associated); err == nil {
		return plain, false, nil
	}
	if s.previous != nil {
		if plain, err := s.previous.Open(nil, raw[:n], raw[n:], associated); err == nil {
			return plain, true, nil
		}
	}
	return nil, false, fmt.Errorf("kernel: %w (was HERALD_SECRET_KEY changed without HERALD_SECRET_KEY_PREVIOUS, or the value copied from another row?)", ErrUnreadable)
}

// HasPrevious reports whether a previous key is held: whether a key is being rotated,
// so that values sealed with the old key are to be sealed again.
func (s *Sealer) HasPrevious() bool { return s.previous != nil }
