package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// HolidayCN returns a year's national holiday calendar in the holiday-cn format, read
// from $HERALD_TEST_HOLIDAY_CN (a directory of <year>.json files) or from a
// shared/data/holiday-cn directory beside the repository or one of its parents. The
// test is skipped, saying so, where neither exists.
func HolidayCN(t testing.TB, year int) []byte {
	t.Helper()
	name := fmt.Sprintf("%d.json", year)
	var dirs []string
	if d := os.Getenv("HERALD_TEST_HOLIDAY_CN"); d != "" {
		dirs = append(dirs, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, filepath.Join(d, "shared", "data", "holiday-cn"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
			return b
		}
	}
	t.Skipf("no holiday-cn calendar %s: set HERALD_TEST_HOLIDAY_CN to a directory holding it", name)
	return nil
}
