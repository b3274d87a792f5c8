package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/google/uuid"

	"herald/kernel"
)

// AckLinks makes and reads the acknowledgment links of alert notices:
// <HERALD_PUBLIC_URL>/ack/<token>, where the token names one message and its
// recipient and is signed with a key derived from HERALD_SECRET_KEY. The link is the
// whole credential of the page it opens (no console login), so it acts as that one
// person on that one alert only; when the alert ended more than a day ago it stops
// working (AckLinkLife, checked when used).
type AckLinks struct {
	base string
	// key signs new links; previous, while HERALD_SECRET_KEY is rotated, still opens
	// links signed before (nil when none).
	key, previous []byte
}

// AckLinkPath is where acknowledgment links point, under the public URL.
const AckLinkPath = "/ack/"

// ackLinkVersion leads every token, so the format can change later.
const ackLinkVersion = 1

// ackMACSize is how much of the HMAC-SHA256 a token carries: 128 bits, far past
// guessing, and the link stays short enough for a text message.
const ackMACSize = 16

// ErrAckLinkInvalid means a token that Herald did not sign as it stands: altered,
// cut short, or signed with a key Herald no longer holds.
var ErrAckLinkInvalid = kernel.Declare(kernel.DomainError{Kind: kernel.KindNotFound, Code: "ack_link_invalid", Key: "ack.invalid",
	Text: "alert: acknowledgment link is not valid"})

// NewAckLinks returns the links of a Herald reachable at publicURL (HERALD_PUBLIC_URL,
// without a trailing slash), signed under secretKey (HERALD_SECRET_KEY); previousKey
// (HERALD_SECRET_KEY_PREVIOUS) may be nil.
func NewAckLinks(publicURL string, secretKey, previousKey []byte) *AckLinks {
	l := &AckLinks{base: publicURL, key: ackKey(secretKey)}
	if len(previousKey) > 0 {
		l.previous = ackKey(previousKey)
	}
	return l
}

// ackKey derives the links' signing key from the secret key, under a label of its own:
// the credentials' encryption key (models' sealer) is derived under another, so neither
// key tells anything of the other.
func ackKey(secret []byte) []byte {
	sum := sha256.Sum256(append([]byte("herald ack links v1\x00"), secret...))
	return sum[:]
}

// Link is the acknowledgment link of a message to a recipient; "" when the message id
// is not one Herald makes (a UUID), which never happens for a stored message.
func (l *AckLinks) Link(messageID string, recipientID int64) string {
	token := l.Token(messageID, recipientID)
	if token == "" {
		return ""
	}
	return l.base + AckLinkPath + token
}

// Token is the signed token of a message to a recipient (see Link); recipient 0 is a
// post to a chat group, whose page asks who taps.
func (l *AckLinks) Token(messageID string, recipientID int64) string {
	id, err := uuid.Parse(messageID)
	if err != nil || recipientID < 0 {
		return ""
	}
	payload := make([]byte, 0, 1+16+binary.MaxVarintLen64+ackMACSize)
	payload = append(payload, ackLinkVersion)
	payload = append(payload, id[:]...)
	payload = binary.AppendUvarint(payload, uint64(recipientID))
	return base64.RawURLEncoding.EncodeToString(append(payload, mac(l.key, payload)...))
}

// AckLink is what a valid token names.
type AckLink struct {
	MessageID   string
	RecipientID int64
}

// Parse checks a token's signature and returns what it names; ErrAckLinkInvalid when
// it was not signed by Herald as it stands. The comparison takes the same time however
// much of the signature matches, so the page is no oracle for forging one.
func (l *AckLinks) Parse(token string) (AckLink, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) < 1+16+1+ackMACSize || raw[0] != ackLinkVersion {
		return AckLink{}, ErrAckLinkInvalid
	}
	payload, sig := raw[:len(raw)-ackMACSize], raw[len(raw)-ackMACSize:]
	if !hmac.Equal(sig, mac(l.key, payload)) && (l.previous == nil || !hmac.Equal(sig, mac(l.previous, payload))) {
		return AckLink{}, ErrAckLinkInvalid
	}
	id, err := uuid.FromBytes(payload[1:17])
	if err != nil {
		return AckLink{}, ErrAckLinkInvalid
	}
	recipient, n := binary.Uvarint(payload[17:])
	if n <= 0 || 17+n != len(payload) || recipient > 1<<62 {
		return AckLink{}, ErrAckLinkInvalid
	}
	return AckLink{MessageID: id.String(), RecipientID: int64(recipient)}, nil
}

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	return h.Sum(nil)[:ackMACSize]
}
