package testenv

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chrome starts a headless Chromium for one test and returns a browser context bounded
// by 90 seconds, or skips the test when no chromium is installed (.ci/run installs
// Debian's). The browser and its profile go when the test ends.
func Chrome(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	// The profile is not t.TempDir: Chromium's helper processes can still be writing to
	// it for a moment after the browser exits, which makes TempDir's cleanup fail.
	profile, err := os.MkdirTemp("", "herald-chrome-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc() // waits for the browser process to exit
		removeAll(t, profile)
	})
	return ctx
}

// removeAll removes a directory that other processes may still be writing to, trying
// again for a few seconds before reporting what is left.
func removeAll(t *testing.T, dir string) {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("leaving browser profile %s: %v", dir, err)
}
