package audit_test

import (
	"context"
	"strings"
	"testing"

	"herald/audit"
	"herald/internal/testenv"
)

// Audit entries never show a URL's credentials or query: webhook and robot URLs carry
// their tokens there, and viewers read the audit log. However an entry is built (named
// values, free text), what is stored is redacted.
func TestAuditRedactsURLs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx":             "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?***",
		"url https://user:pa55@hooks.example/x#frag → https://hooks.example/y?token=abc": "url https://***@hooks.example/x?*** → https://hooks.example/y?***",
		"http://10.0.0.1:8080/path":  "http://10.0.0.1:8080/path",
		"no url here ?key=not-a-url": "no url here ?key=not-a-url",
	} {
		if got := audit.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}

	s := testenv.Store(t)
	ctx := context.Background()
	e := audit.Entry{Actor: "ada", ActorType: "user", Action: "apikey.callback.set", TargetType: "api_key", TargetID: "k",
		Detail: "callback https://hooks.example/cb?key=s3cret"}.WithParams(audit.Params{"url": "https://bot:pw@hooks.example/cb?key=s3cret"})
	if err := s.AuditLog().Write(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.AuditLog().WriteMany(ctx, []audit.Entry{{Actor: "ada", ActorType: "user", Action: "account.update", Detail: "url → https://x.example/?access_token=s3cret"}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.AuditLog().List(ctx, audit.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		params := ""
		if a.Params != nil {
			params = *a.Params
		}
		if strings.Contains(a.Detail+params, "s3cret") || strings.Contains(params, "bot:pw") {
			t.Errorf("stored entry %s shows a secret: %q %s", a.Action, a.Detail, params)
		}
	}
	if got := list[len(list)-1].ParamMap()["url"]; got != "https://***@hooks.example/cb?***" {
		t.Errorf("url param stored as %q", got)
	}
}
