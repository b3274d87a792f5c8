package models

import (
	"context"
	"fmt"
	"herald/directory"
	"herald/sending"
	"herald/templates"
)

// SandboxAccountName is the demo's sending account on the built-in sandbox platform.
const SandboxAccountName = "sandbox"

// SeedDemo fills a new database with a sandbox account, sample staff, a duty week and a
// template, so a fresh install can send something at once.
func (s *Store) SeedDemo(ctx context.Context) error {
	acct := &sending.Account{Name: SandboxAccountName, Platform: "sandbox", IsDefault: true, Enabled: true,
		MaxAttempts: sending.DefaultMaxAttempts, Healthy: true, Config: map[string]string{}}
	if err := s.Sending().CreateAccount(ctx, acct); err != nil {
		return fmt.Errorf("models: demo account: %w", err)
	}
	people := []directory.Recipient{
		{ExternalID: "E1001", Name: "Li Wei", OrgType: directory.HeadOffice, Department: "Operations"},
		{ExternalID: "E1002", Name: "Wang Fang", OrgType: directory.HeadOffice, Department: "Operations"},
		{ExternalID: "E1003", Name: "Zhang Min", OrgType: directory.HeadOffice, Department: "Risk"},
		{ExternalID: "E1004", Name: "Chen Jie", OrgType: directory.HeadOffice, Department: "IT"},
		{ExternalID: "E2001", Name: "Liu Yang", OrgType: directory.Branch, Branch: "Pudong Branch", Department: "Counter"},
		{ExternalID: "E2002", Name: "Zhao Lei", OrgType: directory.Branch, Branch: "Xuhui Branch", Department: "Counter"},
		{ExternalID: "E2003", Name: "Sun Li", OrgType: directory.Branch, Branch: "Pudong Branch", Department: "Credit"},
	}
	for i := range people {
		p := &people[i]
		p.Active = true
		p.TianyuanID = "ty_" + p.ExternalID
		p.ZhaohuID = "zh_" + p.ExternalID
		p.WecomUserid = "wx_" + p.ExternalID
		p.Email = fmt.Sprintf("%s@example.com", p.ExternalID)
		if err := s.Directory().CreateRecipient(ctx, p); err != nil {
			return fmt.Errorf("models: demo recipient: %w", err)
		}
	}
	// A duty week: two head-office people a weekday, one at weekends.
	week := map[int][]int{1: {0, 1}, 2: {1, 2}, 3: {2, 3}, 4: {3, 0}, 5: {0, 2}, 6: {1}, 7: {3}}
	for day, idx := range week {
		for _, i := range idx {
			if err := s.Duty().AddDutySlot(ctx, day, people[i].ID); err != nil {
				return fmt.Errorf("models: demo duty: %w", err)
			}
		}
	}
	t := &templates.Template{Name: "task-overdue", MsgType: "text", Subject: "Task overdue",
		Body: "Overdue: {{.task}}. Please handle it today.", Variables: templates.StringList{"task"}}
	if err := s.Templates().CreateTemplate(ctx, t); err != nil {
		return fmt.Errorf("models: demo template: %w", err)
	}
	// Its version 1, as a save through the console would make it.
	if _, err := s.Templates().AddTemplateVersion(ctx, t, ""); err != nil {
		return fmt.Errorf("models: demo template: %w", err)
	}
	return nil
}
