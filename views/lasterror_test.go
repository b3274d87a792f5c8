package views

import (
	"context"
	"testing"

	"herald/i18n"
)

// Each stored form of the errors Herald writes itself (tasks' sender, the lease sweep)
// reads as its own sentence in both languages, the stored text kept as the detail; a
// platform's text reads as the sentence of its class.
func TestStoredErrorsReadAsSentences(t *testing.T) {
	for _, tc := range []struct {
		class, stored string
		want          map[string]string // language → sentence
		detail        bool
	}{
		{"throttled", "waiting for per_minute capacity", map[string]string{
			i18n.English: "Waiting until the account's limit per minute allows another message",
			i18n.Chinese: "等待账号的每分钟限额腾出余量"}, true},
		{"throttled", "waiting for per_recipient_per_day capacity", map[string]string{
			i18n.Chinese: "等待账号的每人每天限额腾出余量"}, true},
		{"throttled", "waiting for priority capacity", map[string]string{
			i18n.Chinese: "同一账号更紧急的消息优先发送，本条等待中"}, true},
		{"throttled", "waiting for late_admission capacity", map[string]string{
			i18n.Chinese: "限流许可到达过晚未能使用，正在重新申请"}, true},
		{"throttled", "rate limiter unavailable: dial tcp 127.0.0.1:6379: connection refused", map[string]string{
			i18n.Chinese: "无法连接限流器：消息等待中，几秒后重试"}, true},
		{"quiet_hours", "quiet hours of account ty-main until 2031-01-02 08:00", map[string]string{
			i18n.English: "Quiet hours of account ty-main: waits until 2031-01-02 08:00",
			i18n.Chinese: "账号 ty-main 处于免打扰时段：等待至 2031-01-02 08:00"}, true},
		{"throttled", "account ty main is disabled", map[string]string{
			i18n.Chinese: "账号 ty main 已停用：消息等待，直至账号重新启用"}, true},
		{"throttled", "worker stopping", map[string]string{
			i18n.Chinese: "工作进程正在停止：消息已放回队列，不计尝试次数"}, true},
		{"transient", "the worker stopped answering during the attempt (its lease expired); the platform may have received the message", map[string]string{
			i18n.Chinese: "尝试期间工作进程失去响应：平台可能已收到此消息"}, true},
		{"permanent", "40001 invalid user", map[string]string{
			i18n.English: "The platform refused the message", i18n.Chinese: "平台拒收此消息"}, true},
		{"no_address", "", map[string]string{i18n.Chinese: "收件人在此平台没有地址"}, false},
		{"", "something unforeseen", map[string]string{i18n.Chinese: "something unforeseen"}, false},
		{"", "", map[string]string{i18n.Chinese: ""}, false},
	} {
		for lang, want := range tc.want {
			i18n.ResetMissing()
			sentence, detail := storedError(i18n.WithLang(context.Background(), lang), tc.class, tc.stored)
			if sentence != want {
				t.Errorf("%s %q in %s: %q, want %q", tc.class, tc.stored, lang, sentence, want)
			}
			if wantDetail := map[bool]string{true: tc.stored}[tc.detail]; detail != wantDetail {
				t.Errorf("%s %q in %s: detail %q, want %q", tc.class, tc.stored, lang, detail, wantDetail)
			}
			if m := i18n.Missing(); len(m) > 0 {
				t.Errorf("%s %q in %s: lookups failed: %v", tc.class, tc.stored, lang, m)
			}
		}
	}
}
