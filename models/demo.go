package models

import (
	"context"
	"fmt"
	"herald/channels"
	"herald/delivery"
	"herald/directory"
	"herald/sending"
	"herald/templates"
	"net"
)

// SandboxAccountName is the demo's sending account on the built-in sandbox platform.
const SandboxAccountName = "sandbox"

// DemoOptions say what the demo is made for.
type DemoOptions struct {
	// Chinese makes the demo's people, departments, branches and template Chinese (the
	// console's default language is zh-CN).
	Chinese bool
	// SimulatorURL is the base URL of a simulator the demo's WeCom, Feishu and DingTalk
	// accounts and group robots send to, and SimulatorSMTP the host:port of its SMTP server for the demo's
	// email account; "" for neither account.
	SimulatorURL, SimulatorSMTP string
}

// The demo's accounts on the simulator's platforms.
const (
	DemoWeComAccount    = "demo-wecom"
	DemoFeishuAccount   = "demo-feishu"
	DemoDingTalkAccount = "demo-dingtalk"
	DemoEmailAccount    = "demo-email"
	// The demo's group robots, one of each platform's.
	DemoWeComRobotAccount    = "demo-wecom-robot"
	DemoDingTalkRobotAccount = "demo-dingtalk-robot"
	DemoFeishuRobotAccount   = "demo-feishu-robot"
)

// SeedDemo fills a new database with a sandbox account, sample staff, a duty week and a
// template, so a fresh install can send something at once.
func (s *Store) SeedDemo(ctx context.Context) error { return s.SeedDemoWith(ctx, DemoOptions{}) }

// demoPeople are the demo's staff, each name in English and in Chinese: head office
// people have no branch.
var demoPeople = []struct {
	id                 string
	name, branch, dept [2]string
}{
	{"E1001", [2]string{"Li Wei", "李伟"}, [2]string{}, [2]string{"Operations", "运营部"}},
	{"E1002", [2]string{"Wang Fang", "王芳"}, [2]string{}, [2]string{"Operations", "运营部"}},
	{"E1003", [2]string{"Zhang Min", "张敏"}, [2]string{}, [2]string{"Risk", "风险管理部"}},
	{"E1004", [2]string{"Chen Jie", "陈杰"}, [2]string{}, [2]string{"IT", "信息科技部"}},
	{"E2001", [2]string{"Liu Yang", "刘洋"}, [2]string{"Pudong Branch", "浦东分行"}, [2]string{"Counter", "营业部"}},
	{"E2002", [2]string{"Zhao Lei", "赵磊"}, [2]string{"Xuhui Branch", "徐汇支行"}, [2]string{"Counter", "营业部"}},
	{"E2003", [2]string{"Sun Li", "孙丽"}, [2]string{"Pudong Branch", "浦东分行"}, [2]string{"Credit", "信贷部"}},
}

// SeedDemoWith seeds the demo as SeedDemo does, made as o says: in Chinese, and with an
// account on each of the simulator's platforms beside the sandbox.
func (s *Store) SeedDemoWith(ctx context.Context, o DemoOptions) error {
	acct := &sending.Account{Name: SandboxAccountName, Platform: "sandbox", IsDefault: true, Enabled: true,
		MaxAttempts: sending.DefaultMaxAttempts, Healthy: true, Config: map[string]string{}}
	if err := s.Sending().CreateAccount(ctx, acct); err != nil {
		return fmt.Errorf("models: demo account: %w", err)
	}
	if err := s.seedDemoAccounts(ctx, o); err != nil {
		return err
	}
	people := make([]directory.Recipient, len(demoPeople))
	for i, d := range demoPeople {
		people[i] = directory.Recipient{ExternalID: d.id, OrgType: directory.HeadOffice, Name: d.name[0], Department: d.dept[0]}
		if d.branch[0] != "" {
			people[i].OrgType, people[i].Branch = directory.Branch, d.branch[0]
		}
		if o.Chinese {
			people[i].Name, people[i].Branch, people[i].Department = d.name[1], d.branch[1], d.dept[1]
		}
	}
	for i := range people {
		p := &people[i]
		p.Active = true
		p.TianyuanID = "ty_" + p.ExternalID
		p.ZhaohuID = "zh_" + p.ExternalID
		p.WecomUserid = "wx_" + p.ExternalID
		p.Email = fmt.Sprintf("%s@example.com", p.ExternalID)
		if o.SimulatorURL != "" {
			// Their addresses on the platforms of the demo's other accounts.
			p.FeishuUserID = "fs_" + p.ExternalID
			p.DingtalkUserid = "dt_" + p.ExternalID
			p.Mobile = fmt.Sprintf("1390000%04d", 1000+i)
		}
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
	if o.Chinese {
		t.Subject, t.Body = "任务逾期", "逾期任务：{{.task}}。请于今日处理。"
	}
	if err := s.Templates().CreateTemplate(ctx, t); err != nil {
		return fmt.Errorf("models: demo template: %w", err)
	}
	// Its version 1, as a save through the console would make it.
	if _, err := s.Templates().AddTemplateVersion(ctx, t, ""); err != nil {
		return fmt.Errorf("models: demo template: %w", err)
	}
	return nil
}

// seedDemoAccounts makes the demo's accounts on the simulator's platforms, when o names
// a simulator: each reaches it on the loopback address, which only such an account may.
func (s *Store) seedDemoAccounts(ctx context.Context, o DemoOptions) error {
	var accounts []*sending.Account
	if o.SimulatorURL != "" {
		accounts = append(accounts,
			&sending.Account{Name: DemoWeComAccount, Platform: "wecom", Config: map[string]string{
				"corp_id": "ww-demo", "agent_id": "1000002", "secret": "demo-secret", "base_url": o.SimulatorURL + "/wecom"}},
			&sending.Account{Name: DemoFeishuAccount, Platform: "feishu", Config: map[string]string{
				"app_id": "cli_demo", "app_secret": "demo-secret", "base_url": o.SimulatorURL + "/feishu"}},
			&sending.Account{Name: DemoDingTalkAccount, Platform: "dingtalk", Config: map[string]string{
				"app_key": "dingdemo", "agent_id": "1000003", "app_secret": "demo-secret", "base_url": o.SimulatorURL + "/dingtalk"}},
			&sending.Account{Name: DemoWeComRobotAccount, Platform: channels.WeComBot, Config: map[string]string{
				"webhook_url": o.SimulatorURL + "/wecom-bot/cgi-bin/webhook/send?key=demo"}},
			&sending.Account{Name: DemoDingTalkRobotAccount, Platform: channels.DingTalkBot, Config: map[string]string{
				"webhook_url": o.SimulatorURL + "/dingtalk-bot/robot/send?access_token=demo"}},
			&sending.Account{Name: DemoFeishuRobotAccount, Platform: channels.FeishuBot, Config: map[string]string{
				"webhook_url": o.SimulatorURL + "/feishu-bot/open-apis/bot/v2/hook/demo"}})
	}
	if host, port, err := net.SplitHostPort(o.SimulatorSMTP); err == nil {
		accounts = append(accounts, &sending.Account{Name: DemoEmailAccount, Platform: "email", Config: map[string]string{
			"host": host, "port": port, "from": "herald@example.com", "tls": "none"}})
	}
	for _, a := range accounts {
		a.Enabled, a.Healthy, a.AllowPrivateNetwork, a.MaxAttempts = true, true, true, sending.DefaultMaxAttempts
		a.Limits = delivery.DocumentedLimits(a.Platform)
		if err := s.Sending().CreateAccount(ctx, a); err != nil {
			return fmt.Errorf("models: demo account %s: %w", a.Name, err)
		}
	}
	return nil
}
