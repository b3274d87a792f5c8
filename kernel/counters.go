package kernel

// ChangeCounter counts the changes to one kind of data that processes keep in memory
// (change_counters): each change adds one in the transaction that makes it.
type ChangeCounter struct {
	Name    string `gorm:"primaryKey"`
	Version int64
}

// TableName implements gorm's tabler.
func (ChangeCounter) TableName() string { return "change_counters" }
