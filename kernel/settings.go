package kernel

import "time"

// Setting is one run-time setting.
type Setting struct {
	Name      string `gorm:"primaryKey"`
	Value     string
	UpdatedBy string
	UpdatedAt time.Time
}
