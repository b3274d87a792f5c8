package channels

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// WeComCallback checks and opens what WeCom posts to an application's callback URL
// ("接收消息服务器"): every request carries msg_signature, the SHA-1 of the sorted
// token, timestamp, nonce and ciphertext, and the message is AES-256-CBC encrypted
// with the account's EncodingAESKey. It holds no state beyond the settings and is safe
// for concurrent use.
type WeComCallback struct {
	token      string
	key        []byte // the decoded EncodingAESKey, 32 bytes
	receiverID string // the corp id the plaintext must end with
}

// ErrWeComSignature means a callback's msg_signature does not match: it did not come
// from WeCom with this account's token, or was altered on the way.
var ErrWeComSignature = errors.New("channels: wecom callback: signature does not match")

// ErrWeComCallbackOff means the account has no callback settings (token and
// EncodingAESKey), so Herald cannot check what claims to come from WeCom.
var ErrWeComCallbackOff = errors.New("channels: wecom callback: the account has no callback token and EncodingAESKey")

// NewWeComCallback returns the callback checker of a WeCom account's settings (keys
// callback_token, encoding_aes_key, corp_id).
func NewWeComCallback(cfg map[string]string) (*WeComCallback, error) {
	token, aesKey := cfg["callback_token"], cfg["encoding_aes_key"]
	if token == "" || aesKey == "" {
		return nil, ErrWeComCallbackOff
	}
	key, err := decodeEncodingAESKey(aesKey)
	if err != nil {
		return nil, err
	}
	return &WeComCallback{token: token, key: key, receiverID: cfg["corp_id"]}, nil
}

// decodeEncodingAESKey decodes WeCom's 43-character EncodingAESKey: base64 of a 32-byte
// key without its one "=" of padding.
func decodeEncodingAESKey(s string) ([]byte, error) {
	if len(s) != 43 {
		return nil, fmt.Errorf("channels: wecom callback: EncodingAESKey has %d characters, want 43", len(s))
	}
	key, err := base64.StdEncoding.DecodeString(s + "=")
	if err != nil || len(key) != 32 {
		return nil, errors.New("channels: wecom callback: EncodingAESKey is not 43 characters of base64")
	}
	return key, nil
}

// checkWeComCallback is the WeCom account's rule for its callback settings: both or
// neither, and an EncodingAESKey WeCom could have issued.
func checkWeComCallback(cfg map[string]string, _ bool) error {
	token, key := strings.TrimSpace(cfg["callback_token"]), strings.TrimSpace(cfg["encoding_aes_key"])
	switch {
	case token == "" && key == "":
		return nil
	case token == "":
		return note("channels.config.callback_pair").invalid("config.callback_token")
	case key == "":
		return note("channels.config.callback_pair").invalid("config.encoding_aes_key")
	}
	if _, err := decodeEncodingAESKey(key); err != nil {
		return note("channels.config.encoding_aes_key").invalid("config.encoding_aes_key")
	}
	return nil
}

// WeComSignature is msg_signature: the hex SHA-1 of token, timestamp, nonce and the
// ciphertext, sorted and joined.
func WeComSignature(token, timestamp, nonce, ciphertext string) string {
	parts := []string{token, timestamp, nonce, ciphertext}
	sort.Strings(parts)
	sum := sha1.Sum([]byte(strings.Join(parts, "")))
	return hex.EncodeToString(sum[:])
}

// VerifyURL answers WeCom's check of the callback URL (a GET with echostr): the
// decrypted echostr, which the endpoint must answer as it is.
func (c *WeComCallback) VerifyURL(signature, timestamp, nonce, echostr string) (string, error) {
	plain, err := c.open(signature, timestamp, nonce, echostr)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// weComEnvelope is the body of a callback POST: the encrypted message.
type weComEnvelope struct {
	ToUserName string `xml:"ToUserName"`
	Encrypt    string `xml:"Encrypt"`
	AgentID    string `xml:"AgentID"`
}

// Open checks a callback POST's signature and returns the decrypted message (XML).
func (c *WeComCallback) Open(signature, timestamp, nonce string, body []byte) ([]byte, error) {
	var env weComEnvelope
	if err := xml.Unmarshal(body, &env); err != nil || env.Encrypt == "" {
		return nil, errors.New("channels: wecom callback: the body holds no Encrypt element")
	}
	return c.open(signature, timestamp, nonce, env.Encrypt)
}

// open checks the signature over ciphertext, then decrypts it: AES-256-CBC, the IV the
// key's first 16 bytes, PKCS#7 padding to 32 bytes; the plaintext is 16 random bytes,
// the message's length (4 bytes, big-endian), the message, and the corp id.
func (c *WeComCallback) open(signature, timestamp, nonce, ciphertext string) ([]byte, error) {
	want := WeComSignature(c.token, timestamp, nonce, ciphertext)
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(signature)), []byte(want)) != 1 {
		return nil, ErrWeComSignature
	}
	raw, err := base64.StdEncoding.DecodeString(ciphertext)
	if err != nil || len(raw) == 0 || len(raw)%aes.BlockSize != 0 {
		return nil, errors.New("channels: wecom callback: the ciphertext is not whole AES blocks of base64")
	}
	block, err := aes.NewCipher(c.key)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(raw))
	cipher.NewCBCDecrypter(block, c.key[:aes.BlockSize]).CryptBlocks(plain, raw)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > 32 || pad > len(plain) {
		return nil, errors.New("channels: wecom callback: bad padding")
	}
	plain = plain[:len(plain)-pad]
	if len(plain) < 20 {
		return nil, errors.New("channels: wecom callback: plaintext too short")
	}
	n := binary.BigEndian.Uint32(plain[16:20])
	if uint64(n) > uint64(len(plain)-20) {
		return nil, errors.New("channels: wecom callback: message length past the plaintext")
	}
	msg, receiver := plain[20:20+n], plain[20+n:]
	if c.receiverID != "" && !bytes.Equal(receiver, []byte(c.receiverID)) {
		return nil, fmt.Errorf("channels: wecom callback: the message is for %q, not this account's corp id", excerpt(receiver))
	}
	return msg, nil
}

// WeComCardEvent is a click on a template card's button (Event template_card_event).
type WeComCardEvent struct {
	// UserID is the WeCom userid of the member who clicked (FromUserName).
	UserID string
	// Key is the clicked button's key (EventKey); TaskID the card's task_id.
	Key    string
	TaskID string
}

// weComEvent is the part of a decrypted callback message Herald reads.
type weComEvent struct {
	FromUserName string `xml:"FromUserName"`
	MsgType      string `xml:"MsgType"`
	Event        string `xml:"Event"`
	EventKey     string `xml:"EventKey"`
	TaskID       string `xml:"TaskId"`
}

// ParseWeComCardEvent reads a decrypted callback message; ok is false for any message
// other than a template card click (WeCom also posts menu clicks, entering the app, …),
// which Herald ignores.
func ParseWeComCardEvent(msg []byte) (ev WeComCardEvent, ok bool, err error) {
	var e weComEvent
	if err := xml.Unmarshal(msg, &e); err != nil {
		return WeComCardEvent{}, false, fmt.Errorf("channels: wecom callback: unreadable message: %w", err)
	}
	if e.MsgType != "event" || e.Event != "template_card_event" {
		return WeComCardEvent{}, false, nil
	}
	return WeComCardEvent{UserID: e.FromUserName, Key: e.EventKey, TaskID: e.TaskID}, true, nil
}
