package channels

import (
	"maps"
	"strconv"
	"strings"
	"time"
)

// platform is one platform Herald sends through, and everything Herald knows of it.
type platform struct {
	name string
	// fields are its config keys, in the order forms show them (required keys first).
	fields []Field
	// check is the platform's rule across keys, after each key was checked on its own;
	// allowPrivate is the account's allow_private_network.
	check func(cfg map[string]string, allowPrivate bool) error
	// address names the staff member's field that holds their address on the platform,
	// as the staff list and the API name it (tianyuan_id, email, external_id, …).
	address string
	// cap bounds one message's text, counted as the platform counts it. Herald refuses
	// longer content at intake rather than letting a platform cut it, since a platform
	// that cuts at a byte count can cut a Chinese character in half.
	cap ContentCap
	// counted is the text the cap applies to, when it is not the content alone.
	counted func(Message) string
	// html says the platform sends a template's HTML alternative beside the text.
	html bool
	// limits are what the platform documents it enforces, often by dropping the excess
	// without an error, by window name (per_recipient_per_minute, …): a new account
	// starts from them.
	limits map[string]int
	// providerLimits are, for a platform whose accounts choose a provider (sms, voice),
	// what each provider documents, by provider: they replace limits for its accounts.
	providerLimits map[string]map[string]int
	// oncePerDay says the platform delivers one content to one person only once a
	// calendar day and drops a second copy without an error (DingTalk).
	oncePerDay bool
	// recall is how long after sending the platform lets a message be recalled; 0 means
	// the platform cannot recall (its adapter is then no Recaller).
	recall time.Duration
	// recallsCall says a recall takes a message back from everyone the call that carried
	// it reached, not from one person (DingTalk recalls a task, WeCom a msgid).
	recallsCall bool
	// mention is what a group post on the platform @s a person by; nil for a platform
	// whose accounts do not post to chat groups.
	mention *mentionRule
	// build makes the adapter for an account whose settings passed ValidateConfig.
	build func(r *Registry, a Account) (Sender, error)
}

// table is the one list of platforms, in the order forms offer them: validation,
// secrets, destinations, the account form, addresses, the content checks, the default
// limits and the registry all read it.
var table = []platform{
	// Tianyuan and Zhaohu (in-house IM, the generic JSON contract): the contract does not
	// say what its 4000 counts, so Herald counts UTF-8 bytes, the stricter reading: a
	// text of 4000 bytes is never more than 4000 characters either (about 1333 Chinese
	// characters).
	{name: "tianyuan", fields: genericFields, address: "tianyuan_id", cap: ContentCap{Max: 4000, Unit: Bytes}, build: buildGeneric},
	{name: "zhaohu", fields: genericFields, address: "zhaohu_id", cap: ContentCap{Max: 4000, Unit: Bytes}, build: buildGeneric},
	// WeCom counts bytes: text and markdown content are "at most 2048 bytes, UTF-8", and
	// WeCom cuts longer content itself, at a byte, possibly inside a character. The
	// adapter puts the title into the content, so the cap counts the two together.
	{name: "wecom", mention: &mentionRule{field: "wecom_userid"}, fields: []Field{
		{Key: "corp_id", Required: true, Destination: true, Label: "channels.field.corp_id", Help: "channels.help.corp_id"},
		{Key: "agent_id", Required: true, Label: "channels.field.agent_id", Help: "channels.help.agent_id"},
		{Key: "secret", Required: true, Secret: true, Label: "channels.field.wecom_secret"},
		{Key: "base_url", Destination: true, Default: DefaultWeComBaseURL, Label: "channels.field.base_url", Help: "channels.help.wecom_base_url"},
		// The application's callback ("接收消息"), where WeCom reports clicks on alert
		// cards' buttons (see WeComCallback); both or neither.
		{Key: "callback_token", Secret: true, Label: "channels.field.callback_token", Help: "channels.help.callback_token"},
		{Key: "encoding_aes_key", Secret: true, Label: "channels.field.encoding_aes_key", Help: "channels.help.encoding_aes_key"},
	}, check: checkWeComCallback, address: "wecom_userid", cap: ContentCap{Max: 2048, Unit: Bytes}, counted: wecomText,
		// Application messages: at most 30 a minute and 1,000 an hour to one member, the
		// excess dropped without an error. (The daily cap, 200 person-sends per member of
		// the account's licence, depends on the licence: the operator sets per_day.)
		limits: map[string]int{"per_recipient_per_minute": 30, "per_recipient_per_hour": 1000},
		// message/recall takes back an application message within 24 hours, from every
		// person of the call that carried it (its msgid).
		recall: 24 * time.Hour, recallsCall: true,
		build: func(_ *Registry, a Account) (Sender, error) { return newWeCom(a.Config, a.AllowPrivateNetwork), nil }},
	// Feishu (Lark) application messages, sent as the app's bot to a user_id. Feishu
	// refuses a text or post request body over 150 KB. The content travels as a JSON
	// string inside the JSON body, so it is encoded twice and a quote or backslash grows
	// to four bytes: Herald counts the title and text together in UTF-8 bytes and stops
	// at 32 KB (about 10,000 Chinese characters), which stays under 150 KB even for text
	// made of nothing but quotes.
	{name: "feishu", mention: &mentionRule{field: "feishu_user_id"}, fields: []Field{
		{Key: "app_id", Required: true, Destination: true, Label: "channels.field.app_id", Help: "channels.help.app_id"},
		{Key: "app_secret", Required: true, Secret: true, Label: "channels.field.app_secret"},
		{Key: "base_url", Destination: true, Default: DefaultFeishuBaseURL, Label: "channels.field.base_url", Help: "channels.help.feishu_base_url"},
	}, address: "feishu_user_id", cap: ContentCap{Max: 32 << 10, Unit: Bytes}, counted: feishuTextOf,
		// Sending messages: 5 a second to one user (or chat), and 50 a second and 1,000 a
		// minute for the application (HTTP 429, code 99991400, x-ogw-ratelimit-reset).
		limits: map[string]int{"per_recipient_per_second": 5, "per_second": 50, "per_minute": 1000},
		// The bot recalls its own messages within a window the tenant's administrator
		// sets, 24 hours unless changed. The table has one window per platform, so
		// Herald assumes the default; a tenant that shortened it answers 230009, which
		// the recall reports as refused.
		recall: 24 * time.Hour,
		build:  func(_ *Registry, a Account) (Sender, error) { return newFeishu(a.Config, a.AllowPrivateNetwork), nil }},
	// DingTalk work notices of an internal app. DingTalk documents no hard cap on a work
	// notice's text (a text message "should stay within 500 characters"); Herald bounds
	// it at 5,000 characters, title included, as the adapter sends them together.
	{name: "dingtalk", fields: []Field{
		{Key: "app_key", Required: true, Destination: true, Label: "channels.field.dingtalk_app_key", Help: "channels.help.dingtalk_app_key"},
		{Key: "agent_id", Required: true, Label: "channels.field.agent_id", Help: "channels.help.dingtalk_agent_id"},
		{Key: "app_secret", Required: true, Secret: true, Label: "channels.field.dingtalk_app_secret"},
		{Key: "base_url", Destination: true, Default: DefaultDingTalkBaseURL, Label: "channels.field.base_url", Help: "channels.help.dingtalk_base_url"},
	}, address: "dingtalk_userid", cap: ContentCap{Max: 5000, Unit: Characters}, counted: wecomText,
		// Past these DingTalk answers success and delivers nothing: 500 notices per
		// employee per day from an internal app, 5,000 recipients a minute per app.
		limits: map[string]int{"per_recipient_per_day": 500, "per_minute": 5000},
		// It also delivers the same content to one employee only once a day; intake
		// skips the second (duplicate_content_today).
		oncePerDay: true,
		// corpconversation/recall takes back a work notice within 24 hours, from every
		// person of its task.
		recall: 24 * time.Hour, recallsCall: true,
		build: func(_ *Registry, a Account) (Sender, error) { return newDingTalk(a.Config, a.AllowPrivateNetwork), nil }},
	// Email: SMTP sizes are bytes; Herald's own bound, far below what servers accept.
	{name: "email", fields: []Field{
		{Key: "host", Required: true, Destination: true, Label: "channels.field.host", Help: "channels.help.host"},
		{Key: "from", Required: true, Label: "channels.field.from", Help: "channels.help.from"},
		{Key: "port", Destination: true, Label: "channels.field.port", Help: "channels.help.port"},
		{Key: "username", Label: "channels.field.username", Help: "channels.help.username"},
		{Key: "password", Secret: true, Label: "channels.field.password"},
		{Key: "tls", Destination: true, Default: tlsStartTLS, Options: []string{tlsStartTLS, tlsImplicit, tlsNone},
			Warnings: map[string]string{tlsNone: "channels.warning.tls_none"}, Label: "channels.field.tls"},
		{Key: "pool_size", Default: strconv.Itoa(DefaultSMTPPoolSize), Label: "channels.field.pool_size", Help: "channels.help.pool_size"},
		{Key: "session_messages", Default: strconv.Itoa(DefaultSMTPSessionMessages), Label: "channels.field.session_messages", Help: "channels.help.session_messages"},
	}, check: func(cfg map[string]string, _ bool) error {
		if cfg["password"] != "" && strings.TrimSpace(cfg["username"]) == "" {
			return note("channels.config.username_for_password").invalid("config.username")
		}
		return nil
	}, address: "email", cap: ContentCap{Max: 256 << 10, Unit: Bytes}, html: true,
		build: func(_ *Registry, a Account) (Sender, error) { return newEmail(a.Config, a.AllowPrivateNetwork), nil }},
	// SMS through a provider: the content is the provider-approved template's text as
	// the person receives it, which Alibaba Cloud and Tencent Cloud both cap at 500
	// characters (a long SMS, billed by segments). Each provider's per-number limits
	// (the defaults of its console) refuse the excess with an error code.
	{name: "sms", fields: phoneFields(false), check: checkPhone(false), address: "mobile", cap: ContentCap{Max: 500, Unit: Characters},
		providerLimits: map[string]map[string]int{
			// Alibaba Cloud's frequency limit for one number and sign name: 1 a minute,
			// 5 an hour, 10 a day (isv.BUSINESS_LIMIT_CONTROL).
			ProviderAliyun: {"per_recipient_per_minute": 1, "per_recipient_per_hour": 5, "per_recipient_per_day": 10},
			// Tencent Cloud's default: one message to one number in 30 seconds, ten a
			// calendar day (LimitExceeded.PhoneNumberThirtySecondLimit, …DailyLimit).
			ProviderTencent: {"per_recipient_per_30s": 1, "per_recipient_per_day": 10},
		},
		build: buildPhone},
	// Voice calls read a provider-approved TTS template out (trimmed to the provider's
	// cap, see TTSCap); an alert's call asks the callee to press 1.
	{name: "voice", fields: phoneFields(true), check: checkPhone(true), address: "mobile", cap: ContentCap{Max: 500, Unit: Characters},
		providerLimits: map[string]map[string]int{
			// Dyvmsapi's flow control for one callee: 1 a minute, 5 an hour, 20 a day.
			ProviderAliyun: {"per_recipient_per_minute": 1, "per_recipient_per_hour": 5, "per_recipient_per_day": 20},
			// VMS's default for one number: 1 in 30 seconds, 2 in 10 minutes.
			ProviderTencent: {"per_recipient_per_30s": 1, "per_recipient_per_10m": 2},
		},
		build: buildPhone},
	// Webhook: the receiver reads an HTTP body, bytes; Herald's own bound. People are
	// named to the receiver by their external id.
	{name: "webhook", fields: []Field{
		{Key: "url", Required: true, Destination: true, Label: "channels.field.url", Help: "channels.help.url"},
		{Key: "secret", Secret: true, Label: "channels.field.webhook_secret", Help: "channels.help.webhook_secret"},
	}, address: "external_id", cap: ContentCap{Max: 64 << 10, Unit: Bytes},
		build: func(_ *Registry, a Account) (Sender, error) { return newWebhook(a.Config, a.AllowPrivateNetwork), nil }},
	// Group robots post to the one group chat each belongs to, through its webhook URL
	// (see robot.go). They address no person: a post's To is its chat group's name (the
	// address field, external_id, only names people in mentions and records). The
	// cap is intake's bound only: the adapter trims a text past the robot's own cap
	// (robotKinds) rather than refuse it. The limits are each robot's, counted robot by
	// robot across a pool. None can recall a post.
	// WeCom: at most 20 posts a minute (errcode 45009 past it).
	{name: WeComBot, mention: &mentionRule{field: "wecom_userid", mobile: true}, fields: robotFields(WeComBot, false), check: checkRobot(WeComBot), address: "external_id", cap: robotIntakeCap,
		limits: map[string]int{"per_minute": 20}, build: buildRobot},
	// DingTalk: at most 20 posts a minute; past it 130101, and every post refused for ten
	// minutes.
	{name: DingTalkBot, mention: &mentionRule{field: "dingtalk_userid", mobile: true}, fields: robotFields(DingTalkBot, true), check: checkRobot(DingTalkBot), address: "external_id", cap: robotIntakeCap,
		limits: map[string]int{"per_minute": 20}, build: buildRobot},
	// Feishu: at most 100 posts a minute and 5 a second (code 11232 past them).
	{name: FeishuBot, mention: &mentionRule{field: "feishu_user_id"}, fields: robotFields(FeishuBot, true), check: checkRobot(FeishuBot), address: "external_id", cap: robotIntakeCap,
		limits: map[string]int{"per_minute": 100, "per_second": 5}, build: buildRobot},
	// The sandbox is the in-process simulator the registry was given: it simulates the
	// generic contract, counts as Tianyuan does, and addresses people by external id.
	{name: "sandbox", fields: []Field{}, address: "external_id", cap: ContentCap{Max: 4000, Unit: Bytes},
		build: func(r *Registry, a Account) (Sender, error) {
			if r.sandbox == nil {
				return nil, &problemError{prefix: "channels: account " + a.Name + ": ", note: note("channels.probe.no_sandbox")}
			}
			return r.sandbox, nil
		}},
}

// genericFields are the settings of the generic JSON contract (Tianyuan and Zhaohu).
var genericFields = []Field{
	{Key: "base_url", Required: true, Destination: true, Label: "channels.field.base_url", Help: "channels.help.generic_base_url"},
	{Key: "token", Required: true, Secret: true, Label: "channels.field.token", Help: "channels.help.token"},
	{Key: "path", Destination: true, Default: defaultGenericPath, Label: "channels.field.path", Help: "channels.help.path"},
}

func buildGeneric(_ *Registry, a Account) (Sender, error) {
	return newGeneric(a.Platform, a.Config, a.AllowPrivateNetwork), nil
}

// mentionRule is what a platform's group post @s a person by: the staff field holding
// their user id there, and whether it @s by mobile number when they have none (WeCom's
// mentioned_mobile_list, DingTalk's atMobiles; Feishu @s by user id alone).
type mentionRule struct {
	field  string
	mobile bool
}

// GroupPlatforms lists the platforms whose accounts post to chat groups (the group
// robots, and the applications that post to a group chat by its id), in the table's
// order.
func GroupPlatforms() []string {
	var out []string
	for _, p := range table {
		if p.mention != nil {
			out = append(out, p.name)
		}
	}
	return out
}

// MentionBy is what a group post on platform @s a person by: the staff field of their
// user id there, and whether it @s by mobile number where they have none; ok is false
// for a platform whose accounts do not post to chat groups.
func MentionBy(platform string) (field string, byMobile, ok bool) {
	p, known := platforms[platform]
	if !known || p.mention == nil {
		return "", false, false
	}
	return p.mention.field, p.mention.mobile, true
}

// platforms finds a platform of the table by name.
var platforms = func() map[string]*platform {
	out := make(map[string]*platform, len(table))
	for i := range table {
		out[table[i].name] = &table[i]
	}
	return out
}()

// Platforms lists the platform names Herald can send through, in the table's order.
var Platforms = func() []string {
	out := make([]string, len(table))
	for i, p := range table {
		out[i] = p.name
	}
	return out
}()

// defaultCap bounds content for a platform the table does not know.
var defaultCap = ContentCap{Max: 4000, Unit: Bytes}

// Cap returns the content cap of a platform.
func Cap(platform string) ContentCap {
	if p, ok := platforms[platform]; ok {
		return p.cap
	}
	return defaultCap
}

// CountedContent is the text of a message that a platform's cap applies to: the
// content, and for WeCom, which has no title field, the title leading it as the
// adapter sends it. Intake checks this against Cap, so what the platform receives fits.
func CountedContent(platform string, m Message) string {
	if p, ok := platforms[platform]; ok && p.counted != nil {
		return p.counted(m)
	}
	return m.Content
}

// RecallWindow is how long after sending a platform's messages can be recalled; 0 means
// they cannot be.
func RecallWindow(platform string) time.Duration {
	if p, ok := platforms[platform]; ok {
		return p.recall
	}
	return 0
}

// RecallsCall reports whether a platform's recall takes a message back from everyone
// the call that carried it reached (DingTalk: one task, up to DingTalkMaxGroup people
// given the same content; WeCom: one msgid, up to WeComMaxGroup people), so that
// recalling one of them recalls them all.
func RecallsCall(platform string) bool {
	p, ok := platforms[platform]
	return ok && p.recallsCall
}

// OncePerDay reports whether a platform delivers one content to one person only once a
// calendar day, dropping a second copy without an error; intake skips such a copy
// (duplicate_content_today).
func OncePerDay(platform string) bool {
	p, ok := platforms[platform]
	return ok && p.oncePerDay
}

// LargestCapBytes is the most UTF-8 bytes any platform accepts in one message.
func LargestCapBytes() int {
	largest := 0
	for _, p := range table {
		largest = max(largest, p.cap.MaxBytes())
	}
	return largest
}

// TakesHTML reports whether a platform sends a template's HTML alternative (email, as
// multipart/alternative); the others send the text alone.
func TakesHTML(platform string) bool {
	p, ok := platforms[platform]
	return ok && p.html
}

// AddressField names the staff member's field that holds their address on a platform
// (tianyuan_id, zhaohu_id, wecom_userid, email or external_id); "" for an unknown
// platform.
func AddressField(platform string) string {
	if p, ok := platforms[platform]; ok {
		return p.address
	}
	return ""
}

// DocumentedLimits are the limits a platform documents it enforces, by window name
// (per_recipient_per_minute, …): none for the in-house platforms, email and webhooks,
// whose limits are the bank's own. A new account starts from them. For a platform
// whose accounts choose a provider (sms, voice) they are the provider's, named by the
// account's config (its provider key); cfg may be nil for other platforms.
func DocumentedLimits(platform string, cfg map[string]string) map[string]int {
	p, ok := platforms[platform]
	if !ok {
		return nil
	}
	if p.providerLimits != nil {
		return maps.Clone(p.providerLimits[strings.TrimSpace(cfg["provider"])])
	}
	return maps.Clone(p.limits)
}

// ChoosesProvider reports whether a platform's accounts name a provider (sms, voice),
// whose documented limits are the account's defaults.
func ChoosesProvider(platform string) bool {
	p, ok := platforms[platform]
	return ok && p.providerLimits != nil
}

// Fields returns a platform's config keys in form order; nil for an unknown platform.
func Fields(platform string) []Field { return fieldsOf(platform) }

// field returns the description of a platform's key.
func field(platform, key string) (Field, bool) {
	for _, f := range fieldsOf(platform) {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// SecretKeys are the write-only config keys of each platform: stored encrypted, never
// shown again.
var SecretKeys = func() map[string][]string {
	out := map[string][]string{}
	for _, p := range table {
		for _, f := range p.fields {
			if f.Secret {
				out[p.name] = append(out[p.name], f.Key)
			}
		}
	}
	return out
}()

// fieldsOf is a platform's config keys; nil for an unknown platform.
func fieldsOf(platform string) []Field {
	if p, ok := platforms[platform]; ok {
		return p.fields
	}
	return nil
}
