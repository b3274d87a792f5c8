package simulator

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

const (
	smtpHostname        = "herald-sim"
	smtpMaxMessageBytes = 10 << 20
	smtpMaxRecipients   = 100
	// smtpIdleTimeout is RFC 5321's suggested server timeout; it is what frees the
	// goroutine of a client that went away without closing its connection.
	smtpIdleTimeout  = 5 * time.Minute
	smtpWriteTimeout = time.Minute
	// smtpMaxLineBytes bounds a command line; RFC 5321 needs only 512.
	smtpMaxLineBytes = 4096
)

// errLineTooLong reports a command line longer than smtpMaxLineBytes.
var errLineTooLong = errors.New("line too long")

// smtpSession is one SMTP connection.
type smtpSession struct {
	sim  *Simulator
	conn net.Conn
	in   *bufio.Reader
	out  *bufio.Writer

	greeted       bool
	authenticated bool

	// The current mail transaction, from MAIL to the end of DATA or RSET.
	inMail  bool
	verdict verdict
	rcpts   []string
}

// idleReader renews the read deadline before every read, so a session lives as long as
// its client keeps talking and no longer than smtpIdleTimeout after it stops.
type idleReader struct{ conn net.Conn }

func (r idleReader) Read(p []byte) (int, error) {
	r.conn.SetReadDeadline(time.Now().Add(smtpIdleTimeout))
	return r.conn.Read(p)
}

// serveSMTPConn runs one SMTP session on conn.
func (s *Simulator) serveSMTPConn(conn net.Conn) {
	ss := &smtpSession{
		sim:  s,
		conn: conn,
		in:   bufio.NewReaderSize(idleReader{conn}, smtpMaxLineBytes),
		out:  bufio.NewWriter(conn),
	}
	ss.run()
}

// run reads and answers commands until the client quits or the connection fails.
func (ss *smtpSession) run() {
	if ss.reply("220 "+smtpHostname+" ESMTP ready") != nil {
		return
	}
	for {
		line, err := ss.readLine()
		if errors.Is(err, errLineTooLong) {
			if ss.reply("500 5.5.2 line too long") != nil {
				return
			}
			continue
		}
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		if !ss.handle(strings.ToUpper(verb), strings.TrimSpace(arg)) {
			return
		}
	}
}

// handle answers one command; it reports whether the session goes on.
func (ss *smtpSession) handle(verb, arg string) bool {
	switch verb {
	case "EHLO", "HELO":
		if arg == "" {
			return ss.reply("501 5.5.4 "+verb+" needs a domain") == nil
		}
		ss.greeted = true
		ss.resetTransaction()
		if verb == "HELO" {
			return ss.reply("250 "+smtpHostname) == nil
		}
		// No STARTTLS: senders must cope with a server that offers none.
		return ss.reply(
			"250-"+smtpHostname+" greets "+arg,
			"250-8BITMIME",
			"250-SIZE "+strconv.Itoa(smtpMaxMessageBytes),
			"250 AUTH PLAIN LOGIN",
		) == nil
	case "AUTH":
		return ss.auth(arg)
	case "MAIL":
		return ss.mail(arg)
	case "RCPT":
		return ss.rcpt(arg)
	case "DATA":
		return ss.data(arg)
	case "RSET":
		ss.resetTransaction()
		return ss.reply("250 2.0.0 OK") == nil
	case "NOOP":
		return ss.reply("250 2.0.0 OK") == nil
	case "QUIT":
		ss.reply("221 2.0.0 bye")
		return false
	case "":
		return ss.reply("500 5.5.2 empty command") == nil
	}
	return ss.reply("502 5.5.1 command not implemented") == nil
}

// mail starts a transaction and draws its fault, which later commands act on.
func (ss *smtpSession) mail(arg string) bool {
	switch {
	case !ss.greeted:
		return ss.reply("503 5.5.1 send EHLO first") == nil
	case ss.inMail:
		return ss.reply("503 5.5.1 nested MAIL command") == nil
	}
	_, params, ok := parsePath(arg, "FROM:")
	if !ok {
		return ss.reply("501 5.5.4 syntax: MAIL FROM:<address>") == nil
	}
	for _, p := range params {
		if size, found := strings.CutPrefix(strings.ToUpper(p), "SIZE="); found {
			if n, err := strconv.ParseInt(size, 10, 64); err == nil && n > smtpMaxMessageBytes {
				return ss.reply("552 5.3.4 message size exceeds fixed limit") == nil
			}
		}
	}
	v := ss.sim.decide()
	if v.outcome == outcomeAuth {
		if !ss.authenticated {
			return ss.reply("530 5.7.0 authentication required") == nil
		}
		return ss.reply("535 5.7.8 authentication failed") == nil
	}
	ss.inMail = true
	ss.verdict = v
	ss.rcpts = nil
	return ss.reply("250 2.1.0 OK") == nil
}

// rcpt adds a recipient; a reject fault refuses every recipient here, where a real
// server refuses an unknown user.
func (ss *smtpSession) rcpt(arg string) bool {
	if !ss.inMail {
		return ss.reply("503 5.5.1 need MAIL command") == nil
	}
	addr, _, ok := parsePath(arg, "TO:")
	switch {
	case !ok || addr == "":
		return ss.reply("501 5.5.4 syntax: RCPT TO:<address>") == nil
	case len(ss.rcpts) >= smtpMaxRecipients:
		return ss.reply("452 4.5.3 too many recipients") == nil
	case ss.verdict.outcome == outcomeReject:
		return ss.reply("550 5.1.1 user unknown") == nil
	}
	ss.rcpts = append(ss.rcpts, addr)
	return ss.reply("250 2.1.5 OK") == nil
}

// data receives the message and answers as the transaction's fault says.
func (ss *smtpSession) data(arg string) bool {
	switch {
	case !ss.inMail:
		return ss.reply("503 5.5.1 need MAIL command") == nil
	case len(ss.rcpts) == 0:
		return ss.reply("554 5.5.1 no valid recipients") == nil
	case arg != "":
		return ss.reply("501 5.5.4 DATA takes no arguments") == nil
	}
	if ss.reply("354 end data with <CR><LF>.<CR><LF>") != nil {
		return false
	}
	// DotReader undoes dot-stuffing, stops at the lone dot and turns CRLF into LF.
	dot := textproto.NewReader(ss.in).DotReader()
	message, err := io.ReadAll(io.LimitReader(dot, smtpMaxMessageBytes+1))
	if err != nil {
		return false
	}
	v, rcpts := ss.verdict, ss.rcpts
	ss.resetTransaction()
	if len(message) > smtpMaxMessageBytes {
		if _, err := io.Copy(io.Discard, dot); err != nil {
			return false
		}
		return ss.reply("552 5.3.4 message too big") == nil
	}

	received := ss.sim.now()
	if v.latency > 0 {
		time.Sleep(v.latency)
	}
	requestID, content := parseEmail(message)
	deliveries := make([]Delivery, len(rcpts))
	for i, to := range rcpts {
		deliveries[i] = Delivery{
			Platform:     "email",
			To:           to,
			RequestID:    requestID,
			Content:      content,
			ReceivedAtMs: received.UnixMilli(),
		}
	}
	switch v.outcome {
	case outcomeFail:
		return ss.reply("451 4.3.0 temporary failure") == nil
	case outcomeThrottle:
		// RFC 5321 has the server close the channel after a 421, so it does.
		ss.reply("421 4.7.0 too many messages, closing connection")
		return false
	case outcomeReject:
		return ss.reply("550 5.1.1 user unknown") == nil
	case outcomeTimeout:
		ss.holdUntilGone()
		return false
	case outcomeAcceptThenTimeout:
		ss.sim.record(deliveries...)
		ss.holdUntilGone()
		return false
	}
	ss.sim.record(deliveries...)
	return ss.reply("250 2.0.0 OK queued as "+ss.sim.newMsgID()) == nil
}

// holdUntilGone is the SMTP form of a timeout fault: the final dot is never answered,
// and the connection is closed once the client leaves (or the hold ends).
func (ss *smtpSession) holdUntilGone() {
	ctx, clientGone := context.WithCancel(context.Background())
	defer clientGone()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss.conn.SetReadDeadline(time.Time{}) // the hold has its own limit
		io.Copy(io.Discard, ss.conn)
		clientGone()
	}()
	ss.sim.hold(ctx)
	ss.conn.Close()
	<-done
}

// resetTransaction forgets the current mail transaction.
func (ss *smtpSession) resetTransaction() {
	ss.inMail = false
	ss.verdict = verdict{}
	ss.rcpts = nil
}

// readLine reads one command line without its line ending. An overlong line is
// consumed and reported as errLineTooLong so the session can answer and go on.
func (ss *smtpSession) readLine() (string, error) {
	line, err := ss.in.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = ss.in.ReadSlice('\n')
		}
		if err != nil {
			return "", err
		}
		return "", errLineTooLong
	}
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

// reply writes the lines of one reply and flushes them.
func (ss *smtpSession) reply(lines ...string) error {
	ss.conn.SetWriteDeadline(time.Now().Add(smtpWriteTimeout))
	for _, l := range lines {
		ss.out.WriteString(l)
		ss.out.WriteString("\r\n")
	}
	return ss.out.Flush()
}

// parsePath parses the argument of MAIL ("FROM:") or RCPT ("TO:"): the address inside
// angle brackets and any ESMTP parameters after it. Brackets may be missing, as some
// clients leave them out.
func parsePath(arg, prefix string) (addr string, params []string, ok bool) {
	if len(arg) < len(prefix) || !strings.EqualFold(arg[:len(prefix)], prefix) {
		return "", nil, false
	}
	rest := strings.TrimSpace(arg[len(prefix):])
	if inner, ok := strings.CutPrefix(rest, "<"); ok {
		end := strings.IndexByte(inner, '>')
		if end < 0 {
			return "", nil, false
		}
		return inner[:end], strings.Fields(inner[end+1:]), true
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, false
	}
	return fields[0], fields[1:], true
}
