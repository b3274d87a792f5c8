package simulator

import (
	"encoding/json"
	"net/http"
)

// PlatformPrefixes are the paths the platforms are served under: an account's base URL
// is the simulator's address plus its platform's prefix.
var PlatformPrefixes = []string{"/tianyuan", "/zhaohu", "/wecom", "/feishu", "/dingtalk", "/webhook", "/wecom-bot", "/dingtalk-bot", "/feishu-bot",
	"/aliyun", "/tencent", "/phone-gateway"}

// routes lists every HTTP endpoint the simulator serves.
func (s *Simulator) routes() http.Handler {
	mux := http.NewServeMux()

	// Platforms.
	mux.HandleFunc("POST /tianyuan/messages", s.handleGeneric("tianyuan"))
	mux.HandleFunc("POST /zhaohu/messages", s.handleGeneric("zhaohu"))
	mux.HandleFunc("GET /wecom/cgi-bin/gettoken", s.handleWeComToken)
	mux.HandleFunc("POST /wecom/cgi-bin/message/send", s.handleWeComSend)
	mux.HandleFunc("POST /wecom/cgi-bin/message/recall", s.handleWeComRecall)
	mux.HandleFunc("POST /wecom/cgi-bin/appchat/send", s.handleWeComAppChat)
	mux.HandleFunc("POST /feishu/open-apis/auth/v3/tenant_access_token/internal", s.handleFeishuToken)
	mux.HandleFunc("POST /feishu/open-apis/im/v1/messages", s.handleFeishuSend)
	mux.HandleFunc("DELETE /feishu/open-apis/im/v1/messages/{message_id}", s.handleFeishuRecall)
	mux.HandleFunc("POST /webhook/", s.handleWebhook)
	mux.HandleFunc("GET /dingtalk/gettoken", s.handleDingTalkToken)
	mux.HandleFunc("POST /dingtalk/topapi/message/corpconversation/asyncsend_v2", s.handleDingTalkSend)
	mux.HandleFunc("POST /dingtalk/topapi/message/corpconversation/getsendresult", s.handleDingTalkResult)
	mux.HandleFunc("POST /dingtalk/topapi/message/corpconversation/recall", s.handleDingTalkRecall)
	mux.HandleFunc("POST /dingtalk/microapp/visible_scopes", s.handleDingTalkScopes)
	mux.HandleFunc("POST /wecom-bot/cgi-bin/webhook/send", s.robots.handleRobot(wecomBot))
	mux.HandleFunc("POST /dingtalk-bot/robot/send", s.robots.handleRobot(dingtalkBot))
	mux.HandleFunc("POST /feishu-bot/open-apis/bot/v2/hook/{token}", s.robots.handleRobot(feishuBot))
	mux.HandleFunc("POST /aliyun/", s.phone.handleAliyun)
	mux.HandleFunc("POST /tencent/", s.phone.handleTencent)
	mux.HandleFunc("POST /phone-gateway/sms", s.phone.handleGateway("sms"))
	mux.HandleFunc("POST /phone-gateway/call", s.phone.handleGateway("voice"))

	// Control, for tests and benchmarks.
	mux.HandleFunc("GET /_sim/deliveries", s.handleListDeliveries)
	mux.HandleFunc("DELETE /_sim/deliveries", s.handleResetDeliveries)
	mux.HandleFunc("GET /_sim/stats", s.handleStats)
	mux.HandleFunc("GET /_sim/faults", s.handleGetFaults)
	mux.HandleFunc("POST /_sim/faults", s.handlePatchFaults)
	mux.HandleFunc("POST /_sim/wecom/callback", s.handleWeComCallbackSettings)
	mux.HandleFunc("POST /_sim/wecom/click", s.handleWeComClick)
	mux.HandleFunc("PUT /_sim/wecom/directory", s.handleWeComDirectory)
	mux.HandleFunc("POST /_sim/robots", s.robots.handleRobotSettings)
	mux.HandleFunc("POST /_sim/phone", s.phone.handleControl)
	mux.HandleFunc("GET /healthz", handleHealth)

	return mux
}

// Handler returns the HTTP handler serving every platform and control endpoint.
func (s *Simulator) Handler() http.Handler { return s.handler }

// maxBodyBytes bounds request bodies; real platforms refuse far smaller messages.
const maxBodyBytes = 1 << 20

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// abortWithoutAnswer drops the connection without a response. net/http recovers this
// panic quietly; returning normally would send an empty 200, which a sender would read
// as success.
func abortWithoutAnswer() {
	panic(http.ErrAbortHandler)
}

// waitLatency sleeps the injected latency, dropping the connection if the client left.
func waitLatency(r *http.Request, v verdict) {
	if !sleep(r.Context(), v.latency) {
		abortWithoutAnswer()
	}
}

// holdThenAbort is the HTTP form of a timeout fault: say nothing until the client gives
// up, then drop the connection.
func (s *Simulator) holdThenAbort(r *http.Request) {
	s.hold(r.Context())
	abortWithoutAnswer()
}
