package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bgRun is a heatsible run started in the background; its output is
// collected as it comes, so a test can act at a given point of the run.
type bgRun struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	errs  bytes.Buffer
	done  chan struct{}
	code  int
	took  time.Duration
	start time.Time
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// start starts heatsible (see command); the test's cleanup kills it if it
// is still running.
func (b *bed) start(t *testing.T, state string, args ...string) *bgRun {
	t.Helper()
	return startCmd(t, b.command(t, state, args...))
}

// startCmd starts cmd (made by bed.command) as start does.
func startCmd(t *testing.T, cmd *exec.Cmd) *bgRun {
	t.Helper()
	r := &bgRun{cmd: cmd, done: make(chan struct{})}
	r.cmd.Stdout = lockedWriter{&r.mu, &r.out}
	r.cmd.Stderr = lockedWriter{&r.mu, &r.errs}
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting heatsible: %v", err)
	}
	go func() {
		err := r.cmd.Wait()
		r.took = time.Since(r.start)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			r.code = ee.ExitCode() // -1 when killed by a signal
		default:
			r.code = -2
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// signal sends sig to the run. A run that already ended cannot take it:
// the test, which needs it mid-run, fails saying so (not with os.Signal's
// "process already finished").
func (r *bgRun) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	select {
	case <-r.done:
		t.Fatalf("the run ended (exit %d) before it could be sent %s: the test needs it mid-run\n%s", r.code, sig, tail(r.stderr(), 20))
	default:
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			<-r.done
			t.Fatalf("the run ended (exit %d) before it could be sent %s: the test needs it mid-run\n%s", r.code, sig, tail(r.stderr(), 20))
		}
		t.Fatalf("sending %s to the run: %v", sig, err)
	}
}

// killOn sends SIGKILL to pids on a bed host and returns how many were
// there to take it; a process that already exited (kill's "No such
// process") is not an error.
func (b *bed) killOn(t *testing.T, host string, pids ...string) int {
	t.Helper()
	out, err := b.try(host, append([]string{"sh", "-c", `n=0; for p; do kill -KILL "$p" 2>/dev/null && n=$((n+1)); done; echo $n`, "sh"}, pids...)...)
	if err != nil {
		t.Fatalf("killing %v on %s: %v %s", pids, host, err, out)
	}
	var n int
	fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}

func (r *bgRun) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs.String()
}

// waitFor waits until heatsible's stderr contains s; it fails the test if
// the run ends or timeout passes first.
func (r *bgRun) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(r.stderr(), s) {
		select {
		case <-r.done:
			if strings.Contains(r.stderr(), s) {
				return
			}
			t.Fatalf("heatsible ended (exit %d) before printing %q:\n%s", r.code, s, tail(r.stderr(), 30))
		case <-deadline:
			t.Fatalf("heatsible printed no %q within %s:\n%s", s, timeout, tail(r.stderr(), 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wait waits for the run's end (at most timeout) and returns what
// bed.heatsible returns.
func (r *bgRun) wait(t *testing.T, timeout time.Duration) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		// What to look at next time: heatsible's TCP connections as this
		// machine sees them (ESTABLISHED with nothing moving: the peer's
		// FIN never came), then its goroutines (SIGQUIT makes a Go program
		// print them to stderr and exit).
		progress := tail(r.stderr(), 30)
		ss, _ := exec.Command("ss", "-tnoip", "dst", "10.231.0.0/16").CombinedOutput()
		_ = r.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		}
		t.Fatalf("heatsible still runs after %s:\n%s\nits connections (ss -tnoip):\n%s\ngoroutines (SIGQUIT):\n%s",
			timeout, progress, ss, goroutines(r.stderr()))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code, r.out.String(), r.errs.String(), r.took
}

// goroutines returns the goroutine dump a SIGQUIT wrote at the end of
// stderr (from "SIGQUIT: quit" on), at most 200 lines of it.
func goroutines(stderr string) string {
	i := strings.Index(stderr, "SIGQUIT: quit")
	if i < 0 {
		return "(none: heatsible did not print a dump)"
	}
	lines := strings.Split(stderr[i:], "\n")
	if len(lines) > 200 {
		lines = append(lines[:200], "...")
	}
	return strings.Join(lines, "\n")
}

// eventually polls cond every 200 ms until it returns "" (done) or timeout
// passes; then it fails the test with cond's last answer.
func eventually(t *testing.T, timeout time.Duration, cond func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		why := cond()
		if why == "" {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("after %s: %s", timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setFlag returns args with the value after flag replaced by value, or
// flag and value appended when args does not have it.
func setFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = value
			return out
		}
	}
	return append(out, flag, value)
}

// dropFlag returns args without flag and its value.
func dropFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag && i+1 < len(args) {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// errorOf is heatsible's error message, from the "error" member of the
// JSON document -o json prints on stderr (the last lines otherwise).
func errorOf(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), `"error": `); ok {
			var s string
			if json.Unmarshal([]byte(strings.TrimSuffix(v, ",")), &s) == nil {
				return s
			}
		}
	}
	return tail(stderr, 5)
}

// lineWith is the first line of s that contains sub ("" if none).
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// requestDoc is the bed's request.json as a generic document, for tests
// that derive a variant of it (writeRequest saves one).
func (b *bed) requestDoc(t *testing.T) map[string]any {
	t.Helper()
	var req map[string]any
	data, err := os.ReadFile(filepath.Join(b.dir, "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

// writeRequest saves a request document in a new temporary file.
func writeRequest(t *testing.T, req map[string]any) string {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// copyPackage copies the bed's VNF package into a new temporary directory.
func (b *bed) copyPackage(t *testing.T) string {
	t.Helper()
	pkg := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(b.dir, "package")+"/.", pkg).CombinedOutput(); err != nil {
		t.Fatalf("copying the package: %v %s", err, out)
	}
	return pkg
}
