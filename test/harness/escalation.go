package harness

import (
	"time"

	"herald/models"
)

// StepLateness is how long after its due time each fired step fired (the closing checks
// included: they send the nobody-answered notices).
func StepLateness(store *models.Store) ([]time.Duration, error) {
	rows, err := store.SQL().Query("SELECT due_at, fired_at FROM alert_steps WHERE fired_at IS NOT NULL")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var due, fired time.Time
		if err := rows.Scan(&due, &fired); err != nil {
			return nil, err
		}
		out = append(out, fired.Sub(due))
	}
	return out, rows.Err()
}

// NoticesPerPerson counts the alerts' messages by recipient.
func NoticesPerPerson(store *models.Store) (map[string]int, error) {
	rows, err := store.SQL().Query(`SELECT r.external_id, COUNT(*) FROM messages m JOIN recipients r ON r.id = m.recipient_id
		WHERE m.alert_id IS NOT NULL GROUP BY r.external_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var who string
		var n int
		if err := rows.Scan(&who, &n); err != nil {
			return nil, err
		}
		out[who] = n
	}
	return out, rows.Err()
}
