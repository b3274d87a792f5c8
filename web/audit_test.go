package web_test

import (
	"fmt"
	"herald/audit"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestRefusedAPIKeysAreAuditedOnceAMinute(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	anon := c.login("")
	for _, auth := range []string{
		"Bearer hk_aaaaaaaaaaaa_0123", "Bearer hk_aaaaaaaaaaaa_4567", "Bearer hk_aaaaaaaaaaaa_89ab",
		"Bearer hk_bbbbbbbbbbbb_0123", "", "Bearer ",
	} {
		resp, body := anon.do("GET", "/api/v1/messages/x", "", nil, map[string]string{"Authorization": auth})
		wantStatus(t, "API call with "+auth, resp, body, http.StatusUnauthorized)
	}
	// One entry per key prefix and address: two prefixes and no key at all.
	if n := c.auditCount("apikey.auth_failed"); n != 3 {
		t.Errorf("%d refused API keys audited, want 3", n)
	}
	list, err := c.store.AuditLog().List(t.Context(), audit.Filter{Action: "apikey.auth_failed"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		if e.IP != "127.0.0.1" || !strings.HasPrefix(e.Detail, "status 401: ") {
			t.Errorf("audit entry %+v, want the address and the result", e)
		}
		got = append(got, e.Actor)
	}
	want := "apikey:hk_aaaaaaaaaaaa_…|apikey:hk_bbbbbbbbbbbb_…|apikey:unknown"
	if strings.Join(slices.Sorted(slices.Values(got)), "|") != want {
		t.Errorf("actors %v, want %s", got, want)
	}
}

func TestMonitoringChangesAreAudited(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	for _, tt := range []struct{ user, method, path string }{
		{operatorUser, "POST", "/monitoring/api/queues/default:pause"},
		{viewerUser, "POST", "/monitoring/api/queues/default:resume"},
		{adminUser, "DELETE", "/monitoring/api/queues/low"},
	} {
		before := c.auditCount("monitoring.")
		resp, _ := c.as(tt.user).do(tt.method, tt.path, "", nil, nil)
		if n := c.auditCount("monitoring."); n != before+1 {
			t.Fatalf("%s %s as %s: %d audit entries added, want 1", tt.method, tt.path, tt.user, n-before)
		}
		a := c.lastAudit("monitoring.")
		if a.Actor != tt.user || a.Action != "monitoring."+strings.ToLower(tt.method) || a.IP != "127.0.0.1" ||
			a.Detail != fmt.Sprintf("status %d: %s %s", resp.StatusCode, tt.method, tt.path) {
			t.Errorf("%s %s as %s (status %d) audited as %+v", tt.method, tt.path, tt.user, resp.StatusCode, a)
		}
	}
	before := c.auditCount("monitoring.")
	c.as(operatorUser).get("/monitoring/api/queues")
	if n := c.auditCount("monitoring."); n != before {
		t.Errorf("a GET added %d audit entries, want none", n-before)
	}
}

// TestAuditPageSpeaksTheReadersLanguage: an entry with named values reads as its
// action's sentence in the reader's language, the code beside it; an entry written
// before entries had values shows its words as they were.
func TestAuditPageSpeaksTheReadersLanguage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	if err := c.store.AuditLog().Write(ctx, audit.Entry{Actor: "ops1", ActorType: "user", Action: "batch.create", TargetType: "batch",
		TargetID: "b-new"}.WithParams(audit.Params{"accepted": "2", "skipped": "1", "rejected": "0"})); err != nil {
		t.Fatal(err)
	}
	if err := c.store.AuditLog().Write(ctx, audit.Entry{Actor: "ops1", ActorType: "user", Action: "batch.create", TargetType: "batch",
		TargetID: "b-old", Detail: "5 accepted"}); err != nil {
		t.Fatal(err)
	}
	for lang, want := range map[string]string{"zh-CN": "批次已创建：2 人受理，1 人跳过，0 人被拒", "en": "Batch created: 2 accepted, 1 skipped, 0 rejected"} {
		resp, body := c.as(viewerUser).do("GET", "/audit", "", nil, map[string]string{"Accept-Language": lang})
		wantStatus(t, "audit page in "+lang, resp, body, http.StatusOK)
		wantContains(t, "audit page in "+lang, body, want, "batch.create", "5 accepted")
	}
}
