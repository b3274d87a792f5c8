package simulator

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// wecomCard is the template_card of message/send, the parts the simulator checks.
type wecomCard struct {
	CardType  string `json:"card_type"`
	MainTitle struct {
		Title string `json:"title"`
	} `json:"main_title"`
	SubTitleText string `json:"sub_title_text"`
	TaskID       string `json:"task_id"`
	ButtonList   []struct {
		Text string `json:"text"`
		Key  string `json:"key"`
	} `json:"button_list"`
}

// text is what a member reads on the card: its title, then its text.
func (c *wecomCard) text() string {
	if c.SubTitleText == "" {
		return c.MainTitle.Title
	}
	return c.MainTitle.Title + "\n\n" + c.SubTitleText
}

// recorded is the card as a Delivery shows it.
func (c *wecomCard) recorded() *Card {
	out := &Card{CardType: c.CardType, TaskID: c.TaskID, Buttons: []CardButton{}}
	for _, b := range c.ButtonList {
		out.Buttons = append(out.Buttons, CardButton{Text: b.Text, Key: b.Key})
	}
	return out
}

// wecomTaskID is what WeCom accepts as a task id: letters, digits and "_-@", at most
// 128 bytes.
var wecomTaskID = regexp.MustCompile(`^[A-Za-z0-9_\-@]{1,128}$`)

// checkCard says what WeCom would refuse in a button card, or "". Only button cards
// (button_interaction) are played: the ones Herald sends.
func (s *Simulator) checkCard(c *wecomCard) string {
	switch {
	case c.CardType != "button_interaction":
		return "card_type " + c.CardType + " is not played by the simulator"
	case c.MainTitle.Title == "":
		return "main_title.title is empty"
	case !wecomTaskID.MatchString(c.TaskID):
		return "task_id must be 1-128 letters, digits or _-@"
	case len(c.ButtonList) == 0 || len(c.ButtonList) > 6:
		return "button_list must hold 1 to 6 buttons"
	}
	keys := map[string]bool{}
	for _, b := range c.ButtonList {
		if b.Key == "" || b.Text == "" || keys[b.Key] {
			return "every button needs text and a key of its own"
		}
		keys[b.Key] = true
	}
	// A task id is never reused within an application.
	if _, ok := s.card(c.TaskID); ok {
		return "task_id " + c.TaskID + " was used before"
	}
	return ""
}

// card finds the delivery of the card with a task id.
func (s *Simulator) card(taskID string) (Delivery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deliveries {
		if d.Card != nil && d.Card.TaskID == taskID {
			return d, true
		}
	}
	return Delivery{}, false
}

// wecomCallback is an application's callback setting as an administrator enters it in
// WeCom's admin console: the URL, the Token and the EncodingAESKey, and the corp id
// the messages are for.
type wecomCallback struct {
	URL            string `json:"url"`
	Token          string `json:"token"`
	EncodingAESKey string `json:"encoding_aes_key"`
	CorpID         string `json:"corp_id"`
	key            []byte
}

// callbackClient reports clicks to Herald.
var callbackClient = &http.Client{Timeout: 10 * time.Second}

// handleWeComCallbackSettings serves POST /_sim/wecom/callback: the callback setting
// of the application. As WeCom's admin console does when it is saved, the URL is
// checked first: a GET with an encrypted echostr, which the receiver must answer
// decrypted. A setting whose check fails is not kept (502, with what came back).
func (s *Simulator) handleWeComCallbackSettings(w http.ResponseWriter, r *http.Request) {
	var cb wecomCallback
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&cb); err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid callback: " + err.Error()})
		return
	}
	key, err := base64.StdEncoding.DecodeString(cb.EncodingAESKey + "=")
	if len(cb.EncodingAESKey) != 43 || err != nil || len(key) != 32 {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid callback: encoding_aes_key must be 43 characters of base64"})
		return
	}
	if _, err := url.ParseRequestURI(cb.URL); err != nil || cb.Token == "" || cb.CorpID == "" {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid callback: url, token and corp_id are required"})
		return
	}
	cb.key = key
	if err := cb.checkURL(r.Context()); err != nil {
		writeJSON(w, http.StatusBadGateway, controlError{Error: "callback URL check failed: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.wecomCallback = &cb
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// checkURL makes WeCom's check of a callback URL.
func (cb *wecomCallback) checkURL(ctx context.Context) error {
	echo := strconv.FormatInt(time.Now().UnixNano(), 10)
	q := cb.signed(cb.encrypt([]byte(echo)))
	q.Set("echostr", q.Get("encrypt"))
	q.Del("encrypt")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cb.URL+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	status, body, err := callReceiver(req)
	if err != nil {
		return err
	}
	if status != http.StatusOK || strings.TrimSpace(body) != echo {
		return fmt.Errorf("answered %d %q, want 200 %q", status, excerptOf(body), echo)
	}
	return nil
}

// wecomClick is the body of POST /_sim/wecom/click.
type wecomClick struct {
	TaskID string `json:"task_id"`
	Key    string `json:"key"`
	// UserID is who clicks; the card's recipient when empty.
	UserID string `json:"userid"`
}

// wecomClickResult is what the receiver answered the click's callback.
type wecomClickResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// handleWeComClick serves POST /_sim/wecom/click: a member clicks a button of a card the
// simulator delivered, and the simulator reports it to the callback URL as WeCom does:
// a template_card_event, encrypted and signed. The answer says what the receiver
// answered.
func (s *Simulator) handleWeComClick(w http.ResponseWriter, r *http.Request) {
	var click wecomClick
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&click); err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid click: " + err.Error()})
		return
	}
	s.mu.Lock()
	cb := s.wecomCallback
	s.mu.Unlock()
	if cb == nil {
		writeJSON(w, http.StatusConflict, controlError{Error: "no callback set: POST /_sim/wecom/callback first"})
		return
	}
	d, ok := s.card(click.TaskID)
	if !ok {
		writeJSON(w, http.StatusNotFound, controlError{Error: "no card with task_id " + click.TaskID})
		return
	}
	if !hasButton(d.Card, click.Key) {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "the card has no button with key " + click.Key})
		return
	}
	if click.UserID == "" {
		click.UserID = d.To
	}
	if click.UserID != d.To {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "only the card's recipient " + d.To + " sees it"})
		return
	}
	status, body, err := cb.report(r.Context(), cardEventXML(cb.CorpID, click, s.now()))
	if err != nil {
		writeJSON(w, http.StatusBadGateway, controlError{Error: "callback: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, wecomClickResult{Status: status, Body: body})
}

func hasButton(c *Card, key string) bool {
	for _, b := range c.Buttons {
		if b.Key == key {
			return true
		}
	}
	return false
}

// cardEvent is the template_card_event message WeCom posts for a click.
type cardEvent struct {
	XMLName      xml.Name `xml:"xml"`
	ToUserName   string   `xml:"ToUserName"`
	FromUserName string   `xml:"FromUserName"`
	CreateTime   int64    `xml:"CreateTime"`
	MsgType      string   `xml:"MsgType"`
	Event        string   `xml:"Event"`
	EventKey     string   `xml:"EventKey"`
	TaskID       string   `xml:"TaskId"`
	CardType     string   `xml:"CardType"`
	ResponseCode string   `xml:"ResponseCode"`
	AgentID      int64    `xml:"AgentID"`
}

func cardEventXML(corpID string, click wecomClick, now time.Time) []byte {
	b, _ := xml.Marshal(cardEvent{ToUserName: corpID, FromUserName: click.UserID, CreateTime: now.Unix(),
		MsgType: "event", Event: "template_card_event", EventKey: click.Key, TaskID: click.TaskID,
		CardType: "button_interaction", ResponseCode: randomHex(16), AgentID: 1})
	return b
}

// envelope is the body of a callback POST.
type envelope struct {
	XMLName    xml.Name `xml:"xml"`
	ToUserName string   `xml:"ToUserName"`
	Encrypt    string   `xml:"Encrypt"`
	AgentID    int64    `xml:"AgentID"`
}

// report posts an encrypted, signed message to the callback URL.
func (cb *wecomCallback) report(ctx context.Context, msg []byte) (int, string, error) {
	ciphertext := cb.encrypt(msg)
	q := cb.signed(ciphertext)
	q.Del("encrypt")
	body, _ := xml.Marshal(envelope{ToUserName: cb.CorpID, Encrypt: ciphertext, AgentID: 1})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cb.URL+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "text/xml")
	return callReceiver(req)
}

// signed is the query of a callback request: timestamp, nonce and msg_signature, the
// SHA-1 of the sorted token, timestamp, nonce and ciphertext (also under "encrypt",
// for the caller to place).
func (cb *wecomCallback) signed(ciphertext string) url.Values {
	timestamp, nonce := strconv.FormatInt(time.Now().Unix(), 10), randomHex(5)
	parts := []string{cb.Token, timestamp, nonce, ciphertext}
	sort.Strings(parts)
	sum := sha1.Sum([]byte(strings.Join(parts, "")))
	return url.Values{"msg_signature": {hex.EncodeToString(sum[:])}, "timestamp": {timestamp}, "nonce": {nonce}, "encrypt": {ciphertext}}
}

// encrypt is WeCom's message encryption: 16 random bytes, the message's length (4
// bytes, big-endian), the message and the corp id, padded (PKCS#7) to a multiple of 32
// bytes, encrypted with AES-256-CBC under the EncodingAESKey with its first 16 bytes
// as the IV, in base64.
func (cb *wecomCallback) encrypt(msg []byte) string {
	var plain bytes.Buffer
	random := make([]byte, 16)
	rand.Read(random)
	plain.Write(random)
	binary.Write(&plain, binary.BigEndian, uint32(len(msg)))
	plain.Write(msg)
	plain.WriteString(cb.CorpID)
	pad := 32 - plain.Len()%32
	plain.Write(bytes.Repeat([]byte{byte(pad)}, pad))
	block, _ := aes.NewCipher(cb.key) // 32 bytes, checked when set
	out := make([]byte, plain.Len())
	cipher.NewCBCEncrypter(block, cb.key[:aes.BlockSize]).CryptBlocks(out, plain.Bytes())
	return base64.StdEncoding.EncodeToString(out)
}

// callReceiver makes a request to the receiver and reads its answer.
func callReceiver(req *http.Request) (int, string, error) {
	resp, err := callbackClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(body), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// excerptOf shortens a receiver's answer for an error message.
func excerptOf(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
