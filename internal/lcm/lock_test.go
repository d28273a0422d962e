package lcm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
)

// TestMain lets the test binary play a heatsible process that holds a lock
// and is then killed (see TestLockLeftByKilledRun).
func TestMain(m *testing.M) {
	if c := os.Getenv("HEATSIBLE_LOCK_CHILD"); c != "" {
		if _, err := Acquire(c, "heal-end", false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLockLeftByKilledRun(t *testing.T) {
	state := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", state)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HEATSIBLE_LOCK_CHILD=k8s-b")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	// While the child lives: busy, and --break-lock does not take it.
	for _, brk := range []bool{false, true} {
		_, err := Acquire("k8s-b", "scale-end", brk)
		if err == nil || fail.Code(err) != fail.Refused || !strings.Contains(err.Error(), fmt.Sprintf("heal-end (pid %d", cmd.Process.Pid)) || !strings.Contains(err.Error(), "busy") {
			t.Fatalf("Acquire(break=%v) while the holder lives: %v", brk, err)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	_, err = Acquire("k8s-b", "scale-end", false)
	if err == nil || fail.Code(err) != fail.Refused {
		t.Fatalf("Acquire after the holder was killed: %v, want refused", err)
	}
	for _, want := range []string{fmt.Sprintf("heal-end (pid %d", cmd.Process.Pid), "did not finish", "--break-lock", filepath.Join(state, "runs", "k8s-b")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	l, err := Acquire("k8s-b", "scale-end", true)
	if err != nil {
		t.Fatalf("--break-lock: %v", err)
	}
	l.Release()
	// A clean release leaves nothing to break.
	l, err = Acquire("k8s-b", "scale-end", false)
	if err != nil {
		t.Fatalf("after a clean release: %v", err)
	}
	l.Release()
}

// TestRefusedRunsKeepTheKilledRunsRecord: the refusal of a killed run's
// lock tells the operator to read that run's record; a hook retrying the
// refused operation must not push it out of the records kept. Records are
// pruned only by a run that holds the lock.
func TestRefusedRunsKeepTheKilledRunsRecord(t *testing.T) {
	state := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", state)
	runs := filepath.Join(state, RunsDir, "k8s-a")
	killed := filepath.Join(runs, "20261101T090000Z-instantiate-end")
	if err := os.MkdirAll(killed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, RunLog), []byte(`{"kind":"start"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The lock file of a run that was killed: free, holder record left.
	rec := `{"operation":"instantiate-end","pid":4242,"host":"conductor-1","started":"2026-11-01T09:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(state, "k8s-a.lock"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req, _ := fixture(t, "valid")
	o := RunOptions{Operation: OpInstantiateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: "../../testdata/topology/k8s-a.yaml"}, Local: true, KnownHosts: kh,
		Stderr: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := range RecordsKept + 5 {
		_, err := Run(context.Background(), o)
		if fail.Code(err) != fail.Refused || !strings.Contains(err.Error(), "did not finish") {
			t.Fatalf("attempt %d: %v, want refused (a run that did not finish)", i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(killed, RunLog)); err != nil {
		t.Fatalf("the killed run's record is gone after %d refused attempts: %v", RecordsKept+5, err)
	}
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != RecordsKept+6 {
		t.Errorf("%d records, want every refused attempt's and the killed run's (%d)", len(entries), RecordsKept+6)
	}

	// The run that takes the lock over prunes (before it runs anything:
	// without ansible-playbook on PATH it ends right after).
	o.BreakLock = true
	t.Setenv("PATH", t.TempDir())
	if _, err := Run(context.Background(), o); fail.Code(err) == fail.Refused {
		t.Fatalf("--break-lock: %v", err)
	}
	if entries, _ = os.ReadDir(runs); len(entries) != RecordsKept {
		t.Errorf("%d records after a run that held the lock, want %d", len(entries), RecordsKept)
	}
}
