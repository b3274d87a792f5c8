package kernel

// What an imported row does to what is stored: the imports' previews say it of each
// row before anything is written.
const (
	EffectCreate    = "create"
	EffectUpdate    = "update"
	EffectUnchanged = "unchanged"
)
