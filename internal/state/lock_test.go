package state

import (
	"fmt"
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
