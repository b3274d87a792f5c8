package alert

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"herald/models"
)

var (
	linkKey      = []byte("ack-links-test-secret-key-0123456789abcdef")
	otherLinkKey = []byte("another-secret-key-entirely-0123456789abcd")
)

func TestAckLinkRoundTrip(t *testing.T) {
	t.Parallel()
	links := NewAckLinks("https://herald.example.com/h", linkKey, nil)
	id := models.NewID()
	link := links.Link(id, 42)
	prefix := "https://herald.example.com/h" + AckLinkPath
	if !strings.HasPrefix(link, prefix) {
		t.Fatalf("Link = %q, want it under %s", link, prefix)
	}
	// Short enough for a text message: a UUID, an id, a 128-bit MAC.
	if token := strings.TrimPrefix(link, prefix); len(token) > 60 {
		t.Errorf("token %q is %d characters", token, len(token))
	}
	got, err := links.Parse(strings.TrimPrefix(link, prefix))
	if err != nil {
		t.Fatal(err)
	}
	if got != (AckLink{MessageID: id, RecipientID: 42}) {
		t.Errorf("Parse = %+v, want message %s recipient 42", got, id)
	}
}

// Every change to a token, every token of another key, and every token cut short is
// refused: the link binds its message and its recipient.
func TestAckLinkRefusesAlteredTokens(t *testing.T) {
	t.Parallel()
	links := NewAckLinks("http://h", linkKey, nil)
	id := models.NewID()
	token := links.Token(id, 42)
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	for i := range raw {
		for _, bit := range []byte{0x01, 0x80} {
			altered := append([]byte(nil), raw...)
			altered[i] ^= bit
			if l, err := links.Parse(base64.RawURLEncoding.EncodeToString(altered)); !errors.Is(err, ErrAckLinkInvalid) {
				t.Fatalf("byte %d flipped (%#x): Parse = %+v, %v; want ErrAckLinkInvalid", i, bit, l, err)
			}
		}
	}
	// The last character carries bits past the token's end: any other character there
	// is refused too, though a lenient decoder would read the same bytes.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, c := range alphabet {
		if altered := token[:len(token)-1] + string(c); altered != token {
			if _, err := links.Parse(altered); !errors.Is(err, ErrAckLinkInvalid) {
				t.Fatalf("last character changed to %c: Parse = %v, want ErrAckLinkInvalid", c, err)
			}
		}
	}
	// Another recipient's token for the same message is a token of its own: swapping
	// the recipient of one token is a flipped byte above.
	if links.Token(id, 43) == token {
		t.Error("two recipients share a token")
	}
	for _, bad := range []string{"", token[:len(token)-1], token + "A", "!!" + token[2:], NewAckLinks("http://h", otherLinkKey, nil).Token(id, 42)} {
		if _, err := links.Parse(bad); !errors.Is(err, ErrAckLinkInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrAckLinkInvalid", bad, err)
		}
	}
}

// While HERALD_SECRET_KEY is rotated, links signed with the previous key still open;
// new links are signed with the new one.
func TestAckLinkPreviousKey(t *testing.T) {
	t.Parallel()
	old := NewAckLinks("http://h", otherLinkKey, nil)
	rotated := NewAckLinks("http://h", linkKey, otherLinkKey)
	id := models.NewID()
	if _, err := rotated.Parse(old.Token(id, 7)); err != nil {
		t.Errorf("a link of the previous key: %v", err)
	}
	if _, err := old.Parse(rotated.Token(id, 7)); err == nil {
		t.Error("a new link opened with the previous key alone")
	}
}
