package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
)

// TestBrowserPhoneAccountForms fills and submits the account form for an sms account
// (Alibaba Cloud), an sms account through an in-house gateway (two headers, in a text
// area) and a voice account (Tencent Cloud) at 1366, 768 and 390 px: the
// provider's settings appear when the platform is chosen, the page does not scroll
// sideways, and each account is saved with its provider's settings and the provider's
// per-number limits, its secrets sealed.
func TestBrowserPhoneAccountForms(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, adminUser)
	forms := []struct {
		platform string
		settings map[string]string
	}{
		{"sms", map[string]string{"provider": "aliyun", "access_key_id": "LTAI5tExample", "access_key_secret": "aliyun-secret-1", "sign_name": "Herald"}},
		{"sms", map[string]string{"provider": "http", "url": "https://sms-gateway.example.com/send", "headers": "Authorization: Bearer t0ken\nX-Channel: herald",
			"success_path": "code", "success_value": "0"}},
		{"voice", map[string]string{"provider": "tencent", "secret_id": "AKIDExample", "secret_key": "tencent-secret-1", "sdk_app_id": "1400000001",
			"callback_token": "cb-token-1"}},
	}
	choose := func(platform string) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const s = document.querySelector('#platform'); s.value = %q;
			s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, platform), nil)
	}
	for _, width := range []int{1366, 768, 390} {
		for _, f := range forms {
			name := fmt.Sprintf("%s-%s-%d", f.platform, f.settings["provider"], width)
			where := fmt.Sprintf("%s form at %d px", f.platform, width)
			actions := []chromedp.Action{
				chromedp.EmulateViewport(int64(width), 900),
				chromedp.Navigate(c.url + "/accounts/new"),
				chromedp.WaitVisible(`#name`, q),
				chromedp.SendKeys(`#name`, name, q),
				choose(f.platform),
				chromedp.WaitVisible(`[name="config.provider"]`, q),
			}
			for key, value := range f.settings {
				if key == "provider" {
					actions = append(actions, chromedp.SetValue(`[name="config.provider"]`, value, q))
					continue
				}
				actions = append(actions, chromedp.SendKeys(fmt.Sprintf(`[name="config.%s"]`, key), value, q))
			}
			var m layoutMeasure
			actions = append(actions, chromedp.Evaluate(layoutScript, &m))
			if err := chromedp.Run(ctx, actions...); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if m.ScrollWidth > m.Width || m.Width != width {
				t.Errorf("%s: the page is %d px wide and scrolls to %d px", where, m.Width, m.ScrollWidth)
			}
			var page string
			if err := chromedp.Run(ctx, chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#account-usage, .field-error, .alert.error`, q),
				chromedp.Text(`main`, &page, q)); err != nil {
				t.Fatalf("%s: submit: %v", where, err)
			}
			a, err := c.store.Sending().AccountByName(context.Background(), name)
			if err != nil {
				t.Fatalf("%s: the account was not saved: %v (%s)", where, err, strings.Join(strings.Fields(page), " "))
			}
			for key, value := range f.settings {
				if a.Config[key] != value {
					t.Errorf("%s: config.%s = %q, want %q", where, key, a.Config[key], value)
				}
			}
			if f.platform == "sms" && f.settings["provider"] == "aliyun" && (a.Limits.PerRecipientPerMinute != 1 || a.Limits.PerRecipientPerHour != 5 || a.Limits.PerRecipientPerDay != 10) {
				t.Errorf("%s: limits %+v, want Alibaba SMS's 1/min, 5/h, 10/day", where, a.Limits)
			}
			if f.platform == "voice" && (a.Limits.PerRecipientPer30s != 1 || a.Limits.PerRecipientPer10m != 2) {
				t.Errorf("%s: limits %+v, want Tencent voice's 1/30 s, 2/10 min", where, a.Limits)
			}
			if f.platform == "voice" {
				var callback string
				if err := chromedp.Run(ctx, chromedp.Navigate(c.url+"/accounts/"+name+"/edit"), chromedp.WaitVisible(`#voice-callback-url`, q),
					chromedp.Text(`#voice-callback-url`, &callback, q)); err != nil {
					t.Fatalf("%s: the callback URL: %v", where, err)
				}
				if !strings.Contains(callback, "/callbacks/voice/"+name+"?token=<callback_token>") || strings.Contains(callback, "cb-token-1") {
					t.Errorf("%s: callback URL %q, want the account's with the token's place marked, the token not shown", where, callback)
				}
			}
		}
	}
}

// TestBrowserProviderTemplateForm writes an SMS template in the editor: the preview
// shows the text the person receives with its length and billing segments and the
// parameters rendered; a parameter left unmapped is refused naming its line, and the
// template saves once it is mapped.
func TestBrowserProviderTemplateForm(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	body := "【Herald】{{.host}} 的磁盘已满，请值班同事尽快登录服务器清理日志文件并确认业务恢复正常，处理完成后在告警页面点击确认，如需协助请联系数据库组同事。"
	var segments, params, errText string
	err := chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(c.url+"/login"),
		chromedp.WaitVisible(`#username`, q),
		chromedp.SendKeys(`#username`, operatorUser, q),
		chromedp.SendKeys(`#password`, testPassword, q),
		chromedp.Submit(`#password`, q),
		chromedp.WaitVisible(`header.topbar`, q),
		chromedp.Navigate(c.url+"/templates/new"),
		chromedp.WaitVisible(`#name`, q),
		chromedp.SendKeys(`#name`, "disk-full", q),
		chromedp.SendKeys(`#variables`, "host", q),
		chromedp.SendKeys(`#provider_template`, "SMS_100001", q),
		chromedp.SendKeys(`#provider_params`, "host={{.host}}\nlevel=", q),
		chromedp.SendKeys(`#samples`, "host = db-1", q),
		// The body last, once the previews the other fields asked for have settled, and
		// submitted once it holds what was typed.
		chromedp.Poll(`!document.documentElement.classList.contains('htmx-working')`, nil),
		chromedp.SendKeys(`#body`, body, q),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Poll(`!document.documentElement.classList.contains('htmx-working') && document.querySelector('#body').value.length > 0`, nil),
		chromedp.Submit(`#name`, q),
		chromedp.WaitVisible(`.field-error`, q),
		chromedp.Text(`.field.error, .field-error`, &errText, q),
	)
	if err != nil {
		t.Fatalf("write the template: %v", err)
	}
	if !strings.Contains(errText, "2:") || !strings.Contains(errText, "level") {
		t.Errorf("an unmapped parameter: %q, want a problem on line 2 naming level", errText)
	}
	if _, err := c.store.Templates().TemplateByName(context.Background(), "disk-full"); err == nil {
		t.Fatal("a template with an unmapped parameter was saved")
	}
	err = chromedp.Run(ctx,
		chromedp.SetValue(`#provider_params`, "host={{.host}}\nlevel=high", q),
		chromedp.SendKeys(`#samples`, " ", q), // an input event: the preview renders again
		chromedp.WaitVisible(`#preview-segments`, q),
		chromedp.Text(`#preview-segments`, &segments, q),
		chromedp.Text(`#preview-params`, &params, q),
	)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if !strings.Contains(segments, "76") || !strings.Contains(segments, "2 SMS") {
		t.Errorf("segments = %q, want 76 characters in 2 segments", segments)
	}
	if !strings.Contains(params, "host = db-1") || !strings.Contains(params, "level = high") {
		t.Errorf("params = %q", params)
	}
	if err := chromedp.Run(ctx, chromedp.Submit(`#name`, q), chromedp.WaitNotPresent(`#provider_params + .field-error`, q),
		chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatalf("save: %v", err)
	}
	testenv.WaitFor(t, 5*time.Second, "the template saved", func() bool {
		tm, err := c.store.Templates().TemplateByName(context.Background(), "disk-full")
		return err == nil && tm.ProviderTemplate == "SMS_100001" && len(tm.ProviderParams) == 2 && tm.ProviderParams[1] == "level=high"
	})
}
