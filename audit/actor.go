package audit

// Actor types, as the audit log records them.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
)

// Actor is who makes a change and from where: a console user, an API key, the command
// line (a user named "cli") or Herald itself.
type Actor struct {
	// Name is what the audit log shows: a username, "apikey:<name>", "cli", or the name
	// of one of Herald's own jobs.
	Name string
	// Type is ActorUser, ActorAPIKey or ActorSystem.
	Type string
	// Person is the console user behind the change: the user themself, or the user who
	// created the API key. Empty for Herald's own jobs.
	Person string
	// APIKeyID is the key of an API change; 0 otherwise.
	APIKeyID int64
	// OwnOnly is set for an API key without the admin scope: it may read and change only
	// the batches created through it and their messages (OwnKey).
	OwnOnly bool
	// IP is the address the change came from; empty for the command line and jobs.
	IP string
}

// System is Herald itself acting as name (a scheduled job, the first start).
func System(name string) Actor { return Actor{Name: name, Type: ActorSystem} }

// Entry is an audit entry of this actor's.
func (a Actor) Entry(action, targetType, targetID string, params Params) Entry {
	return Entry{Actor: a.Name, ActorType: a.Type, Action: action, TargetType: targetType,
		TargetID: targetID, IP: a.IP}.WithParams(params)
}

// OwnKey is the API key whose batches alone the actor may read and change: its own key
// when it is a send or read key, 0 (everything) for an admin key or a console user.
func (a Actor) OwnKey() int64 {
	if a.OwnOnly {
		return a.APIKeyID
	}
	return 0
}
