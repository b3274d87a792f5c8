package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Chrome returns a tab of the test binary's headless Chromium for one test, bounded by 90
// seconds, or skips the test when no chromium is installed (.ci/run installs Debian's).
// The browser starts with the first test that asks for it and serves every test of the
// binary; each test gets a browser context of its own (as a private window has: its own
// cookies and storage, so tests of servers on one host do not see each other's sessions),
// closed when the test ends. A package's TestMain calls CloseChrome after its tests; in a
// package without one the browser dies with the test binary (chromedp asks the kernel to
// kill it then) and the next binary to start a browser removes its profile.
func Chrome(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	bctx, err := sharedChrome(path)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// A browser context of its own and a window in it (chromedp's WithNewBrowserContext
	// asks for a tab, which a new browser context has no window to put in).
	browser := cdp.WithExecutor(bctx, chromedp.FromContext(bctx).Browser)
	id, err := target.CreateBrowserContext().WithDisposeOnDetach(true).Do(browser)
	if err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	tid, err := target.CreateTarget("about:blank").WithBrowserContextID(id).WithNewWindow(true).
		WithWidth(1280).WithHeight(900).Do(browser)
	if err != nil {
		t.Fatalf("open a browser window: %v", err)
	}
	tab, cancelTab := chromedp.NewContext(bctx, chromedp.WithTargetID(tid))
	ctx, cancelTimeout := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab() // closes the window
		_ = target.DisposeBrowserContext(id).Do(browser)
	})
	return ctx
}

// chrome is the test binary's browser.
var chrome struct {
	mu      sync.Mutex
	ctx     context.Context // its first tab, which holds the browser
	cancel  func()          // closes it and waits for it to exit
	profile string
}

// sharedChrome returns the context of the binary's browser, starting it if it is not
// running (never started, closed, or crashed).
func sharedChrome(path string) (context.Context, error) {
	chrome.mu.Lock()
	defer chrome.mu.Unlock()
	if chrome.ctx != nil && chrome.ctx.Err() == nil {
		return chrome.ctx, nil
	}
	closeChromeLocked()
	removeDeadProfiles()
	// The profile is not t.TempDir: it outlives the test that started the browser, and
	// Chromium's helper processes can still be writing to it for a moment after the
	// browser exits. Its name carries this binary's pid for removeDeadProfiles.
	profile, err := os.MkdirTemp("", fmt.Sprintf("herald-chrome-%d-", os.Getpid()))
	if err != nil {
		return nil, err
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
	cancel := func() {
		cancelCtx()
		cancelAlloc() // waits for the browser process to exit
	}
	// Not under a timeout: the context of the first Run is the browser's lifetime.
	if err := chromedp.Run(ctx); err != nil {
		cancel()
		removeAll(profile)
		return nil, err
	}
	chrome.ctx, chrome.cancel, chrome.profile = ctx, cancel, profile
	return ctx, nil
}

// CloseChrome closes the test binary's browser, if one was started, and removes its
// profile. A TestMain calls it after m.Run.
func CloseChrome() {
	chrome.mu.Lock()
	defer chrome.mu.Unlock()
	closeChromeLocked()
}

func closeChromeLocked() {
	if chrome.cancel == nil {
		return
	}
	chrome.cancel()
	if err := removeAll(chrome.profile); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: leaving browser profile %s: %v\n", chrome.profile, err)
	}
	chrome.ctx, chrome.cancel, chrome.profile = nil, nil, ""
}

// removeDeadProfiles removes the profiles of browsers whose test binary has exited
// without closing them.
func removeDeadProfiles() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "herald-chrome-*-*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.Split(filepath.Base(dir), "-")[2])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = removeAll(dir)
		}
	}
}

// removeAll removes a directory that other processes may still be writing to, trying
// again for a few seconds.
func removeAll(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}
