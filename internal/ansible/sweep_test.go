package ansible

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBundleHolderProcess is not a test: TestSweepStale and
// TestKilledRunLeavesNoAnsible run the test binary with it to play a
// heatsible process that stages a bundle (and, with HS_HOLDER_RUN, runs the
// probe role in it) and is then killed.
func TestBundleHolderProcess(t *testing.T) {
	base, cluster := os.Getenv("HS_HOLDER_BASE"), os.Getenv("HS_HOLDER_CLUSTER")
	if base == "" {
		t.Skip("helper process for TestSweepStale")
	}
	if os.Getenv("HS_HOLDER_RUN") == "" {
		spec := minimalSpec(t)
		spec.BaseDir, spec.Cluster = base, cluster
		b, err := NewBundle(spec)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("bundle", b.Dir)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	spec := probeSpec(t, os.Getenv("HS_HOLDER_RUN"), map[string]string{"node-a": "probe_sleep: 119"})
	spec.BaseDir, spec.Cluster = base, cluster
	b, err := NewBundle(spec)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	_, _ = LocalRunner{}.Run(context.Background(), b, PlaybookOptions{OnEvent: func(e Event) {
		if e.Kind == KindTaskStart && e.Task == "probe : Take a while" {
			fmt.Println("bundle", b.Dir)
		}
	}})
	os.Exit(0)
}

// bundleHolder starts TestBundleHolderProcess and returns it with the bundle it
// staged.
func bundleHolder(t *testing.T, base, cluster string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBundleHolderProcess$")
	cmd.Env = append(os.Environ(), append([]string{"HS_HOLDER_BASE=" + base, "HS_HOLDER_CLUSTER=" + cluster}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "bundle ") || strings.HasPrefix(l, "error ") {
				lines <- l
			}
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok || !strings.HasPrefix(l, "bundle ") {
			t.Fatalf("helper process: %q", l)
		}
		return cmd, strings.TrimPrefix(l, "bundle ")
	case <-time.After(2 * time.Minute):
		t.Fatal("helper process staged no bundle within 2 minutes")
	}
	return nil, ""
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	// A process that already exited needs no kill (os.ErrProcessDone).
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestSweepStale: the bundle of a killed run of the cluster is removed
// (secrets included); a live run's bundle (here, in another process and in
// this one), another cluster's whose name shares the prefix, a directory
// that is no bundle and a symlink are not.
func TestSweepStale(t *testing.T) {
	base := t.TempDir()
	killed, killedDir := bundleHolder(t, base, "c1")
	live, liveDir := bundleHolder(t, base, "c1")
	other, otherDir := bundleHolder(t, base, "c1-b") // "heatsible-c1-b-..." starts with "heatsible-c1-"
	kill(t, killed)
	kill(t, other)
	spec := minimalSpec(t)
	spec.BaseDir = base
	own, err := NewBundle(spec) // c1, held by this process
	if err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(base, "heatsible-c1-heal_end-junk")
	if err := os.Mkdir(junk, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	_, deadElsewhere := bundleHolder(t, elsewhere, "c1")
	link := filepath.Join(base, "heatsible-c1-heal_end-link")
	if err := os.Symlink(deadElsewhere, link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(killedDir, SecretsFile)); err != nil {
		t.Fatalf("the killed run's bundle should still be there, secrets included: %v", err)
	}

	removed, err := SweepStale(base, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{killedDir}) {
		t.Errorf("removed %v, want only the killed run's %s", removed, killedDir)
	}
	for _, d := range []string{liveDir, otherDir, own.Dir, junk, link} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s: %v (it must stay)", d, err)
		}
	}
	if _, err := os.Stat(killedDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's bundle is still there: %v", err)
	}

	// Once its owner has gone, the live one is stale too; a closed bundle
	// is simply gone.
	kill(t, live)
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	if err := own.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	removed, err = SweepStale(base, "c1")
	if err != nil || !slices.Equal(removed, []string{liveDir}) {
		t.Errorf("after the live run was killed: removed %v (%v), want %s", removed, err, liveDir)
	}
}

// TestBundleMarkerLockedUntilClose: the marker is locked from the moment
// the bundle exists until it is gone.
func TestBundleMarkerLockedUntilClose(t *testing.T) {
	b, err := NewBundle(minimalSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(b.Dir, MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("flock of a live bundle's marker: %v, want EWOULDBLOCK", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("flock after Close: %v", err)
	}
}

// TestKilledRunLeavesNoAnsible: when heatsible is killed (SIGKILL) while
// ansible-playbook runs on this machine, Ansible and the commands its
// workers run are stopped too, and the bundle left behind is swept.
func TestKilledRunLeavesNoAnsible(t *testing.T) {
	needAnsible(t)
	base := t.TempDir()
	cmd, dir := bundleHolder(t, base, "c2", "HS_HOLDER_RUN="+t.TempDir())
	for deadline := time.Now().Add(20 * time.Second); len(processes("sleep 119")) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the probe's sleep does not run")
		}
	}
	kill(t, cmd)
	waitNoProcess(t, "sleep 119")
	waitNoProcess(t, dir)
	removed, err := SweepStale(base, "c2")
	if err != nil || !slices.Equal(removed, []string{dir}) {
		t.Errorf("SweepStale: %v (%v), want %s", removed, err, dir)
	}
}

// processes lists the live processes whose command line contains pattern.
func processes(pattern string) []string {
	var out []string
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, pattern) && !strings.Contains(cmd, "-test.run") {
			out = append(out, filepath.Dir(m)+": "+cmd)
		}
	}
	return out
}
