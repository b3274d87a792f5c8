package kernel

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// NewToken returns a random URL-safe token of 32 bytes.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is the SHA-256 of a token or an API key's secret, in hex: what is stored
// of it, so that a stolen database opens nothing.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// SharedRead is the context of a read that concurrent requests share: requests that
// joined it must not fail because the one that began it went away, but that one's
// deadline still bounds the read when the database stalls.
func SharedRead(ctx context.Context) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), deadline)
	}
	return context.WithoutCancel(ctx), func() {}
}
