package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
	"herald/templates"
)

// A silence's matcher value offers the values of the name chosen beside it, each with
// what it is (a template's display name): at 1366, 768 and 390 px, in Chinese, the
// operator picks 模板, finds disk-full beside 磁盘将满, saves on the display name and is
// told the name it meant, then saves on the name.
func TestBrowserSilenceValuePicker(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	if err := c.store.Templates().CreateTemplate(context.Background(), &templates.Template{Name: "disk-full", DisplayName: "磁盘将满",
		MsgType: "text", Body: "磁盘将满"}); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, operatorUser, network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "zh-CN,zh;q=0.9"}))
	for _, width := range []int64{1366, 768, 390} {
		var list string
		var options []string
		var scrollWidth int64
		err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(c.url+"/silences/new"), chromedp.WaitVisible(`#silence-form`, q),
			chromedp.Evaluate(`(() => { const s = document.querySelector('#name_0'); s.value = 'template';
				s.dispatchEvent(new Event('change', {bubbles: true})); return document.querySelector('#value_0').getAttribute('list'); })()`, &list),
			chromedp.Evaluate(`[...document.querySelectorAll('#'+document.querySelector('#value_0').getAttribute('list')+' option')].map(o => o.value + '|' + o.textContent)`, &options),
			chromedp.Evaluate(`document.scrollingElement.scrollWidth`, &scrollWidth),
			chromedp.SendKeys(`#value_0`, "磁盘将满", q),
			chromedp.SendKeys(`#comment`, fmt.Sprintf("磁盘扩容 %d", width), q),
			chromedp.Submit(`#comment`, q),
		)
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if list != "matcher-values-template" || !strings.Contains(strings.Join(options, ";"), "disk-full|磁盘将满") {
			t.Errorf("%d px: the value offers list %q: %v", width, list, options)
		}
		if scrollWidth > width {
			t.Errorf("%d px: the form is %d px wide", width, scrollWidth)
		}
		if err := waitFor(ctx, `#error-value_0`, "disk-full"); err != nil {
			t.Fatalf("%d px: saving on the display name: %v", width, err)
		}
		if err := chromedp.Run(ctx, chromedp.SetValue(`#value_0`, "disk-full", q), chromedp.Submit(`#comment`, q),
			chromedp.WaitVisible(`table`, q)); err != nil {
			t.Fatalf("%d px: saving on the name: %v", width, err)
		}
		var url string
		if err := chromedp.Run(ctx, chromedp.Location(&url)); err != nil || !strings.HasSuffix(strings.Split(url, "?")[0], "/silences") {
			t.Errorf("%d px: after saving at %q (%v), want the silences list", width, url, err)
		}
	}
}
