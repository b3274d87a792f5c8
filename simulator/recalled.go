package simulator

// markRecalled marks every delivery a platform accepted as providerMsgID recalled and
// reports whether there was any. (The minimal form DingTalk's recall needs; the recall
// work for every platform may replace it with its own.)
func (s *Simulator) markRecalled(platform, providerMsgID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for i := range s.deliveries {
		if d := &s.deliveries[i]; d.Platform == platform && d.ProviderMsgID == providerMsgID {
			d.Recalled = true
			found = true
		}
	}
	return found
}
