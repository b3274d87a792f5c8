package access_test

import (
	"testing"

	"herald/access"
)

// A User-Agent reads as the browser or app, its major version and the system.
func TestParseAgent(t *testing.T) {
	t.Parallel()
	for ua, want := range map[string]access.Agent{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36":                                              {"chrome", "131", "windows"},
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86":                            {"edge", "131", "windows"},
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15":                                        {"safari", "17", "macos"},
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.50(0x1800323d) NetType/WIFI": {"wechat", "8", "ios"},
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 wxwork/4.1.30":                          {"wecom", "4", "android"},
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0":                                                                                       {"firefox", "133", "linux"},
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1":               {"chrome", "131", "ios"},
		"curl/8.5.0": {},
		"":           {},
	} {
		if got := access.ParseAgent(ua); got != want {
			t.Errorf("ParseAgent(%q) = %+v, want %+v", ua, got, want)
		}
	}
}
