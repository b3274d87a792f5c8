package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"herald/internal/testenv"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// HeraldBinary builds the herald binary once per test run, with the race detector when
// the test binary has it: the processes a test starts are checked for races too, and the
// build reuses the packages go test -race compiled instead of compiling them all again.
func HeraldBinary(t testing.TB) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "herald")
		args := []string{"build", "-o", builtBin}
		if RaceDetector {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, "herald")...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build herald: %v", buildErr)
	}
	return builtBin
}

// ProcessEnv is the environment of a herald process the test runs: env and PATH, nothing
// of the test's own environment.
func ProcessEnv(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// StartWorkers starts n `herald serve --role worker` processes and stops them at the end.
func StartWorkers(t testing.TB, env map[string]string, n int, extra ...string) []*Process {
	t.Helper()
	var procs []*Process
	for range n {
		// Each worker serves /healthz, /readyz and /metrics on a port of its own.
		procs = append(procs, StartRole(t, env, "worker", append([]string{"HERALD_ADDR=127.0.0.1:0"}, extra...)...))
	}
	return procs
}

// Process is a Herald process started by a test. One goroutine waits for it, so the
// test and the cleanup can both wait without racing.
type Process struct {
	*exec.Cmd
	done chan struct{}
	err  error
	// stderr is what the process has written to its standard error so far.
	stderr *testenv.SyncBuffer
}

// Logged reports whether the process has written s to its standard error (its log).
func (p *Process) Logged(s string) bool { return strings.Contains(p.stderr.String(), s) }

// Wait waits for the process to exit and returns how it ended.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Done is closed once the process has exited; Wait then returns at once.
func (p *Process) Done() <-chan struct{} { return p.done }

// StartRole starts `herald serve --role role` as a process of its own, with env plus the
// extra KEY=value settings, and stops it with SIGTERM at the end of the test.
func StartRole(t testing.TB, env map[string]string, role string, extra ...string) *Process {
	t.Helper()
	return StartRoleUnder(t, nil, env, role, extra...)
}

// StartRoleUnder is StartRole with the command run under wrapper (a command and its
// arguments, such as nice -n 10), none when empty.
func StartRoleUnder(t testing.TB, wrapper []string, env map[string]string, role string, extra ...string) *Process {
	t.Helper()
	args := append(append([]string{}, wrapper...), HeraldBinary(t), "serve", "--role", role)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(ProcessEnv(env), extra...)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, done: make(chan struct{}), stderr: stderr}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		out := stderr.String()
		if i := strings.Index(out, "WARNING: DATA RACE"); i >= 0 {
			t.Errorf("the %s process reported a data race:\n%s", role, firstLines(out[i:], 60))
		} else if t.Failed() && out != "" {
			t.Logf("%s process output:\n%s", role, lastLines(out, 20))
		}
	})
	return p
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// WindowOracle computes, from delivery receipt times, the largest count in any trailing
// window (t−w, t] and the mean use of the limit from the first full window to the last
// delivery, sampled every 100 ms.
func WindowOracle(ms []int64, w int64, limit int) (maxCount int, utilisation float64) {
	slices.Sort(ms)
	lo := 0
	for hi := range ms {
		for ms[lo] <= ms[hi]-w {
			lo++
		}
		maxCount = max(maxCount, hi-lo+1)
	}
	if len(ms) == 0 || ms[len(ms)-1]-ms[0] <= w {
		return maxCount, 0
	}
	var sum float64
	var samples int
	for t := ms[0] + w; t <= ms[len(ms)-1]; t += 100 {
		i, _ := slices.BinarySearch(ms, t-w+1)
		j, _ := slices.BinarySearch(ms, t+1)
		sum += float64(j-i) / float64(limit)
		samples++
	}
	return maxCount, sum / float64(samples)
}
