package delivery

// Usage is one limited window's current use by an account.
type Usage struct {
	Window string `json:"window"`
	Used   int    `json:"used"`
	Limit  int    `json:"limit"`
}
