package duty

// ValidateHoliday checks one holiday entry with the rule SetHolidays applies, so an
// import can report every bad row before anything is written.
func ValidateHoliday(h *Holiday) error { return validateHoliday(h) }
