package ansible

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// namedSleep starts a sleep whose command line starts with name, the way a
// worker's names the bundle's playbook.
func namedSleep(t *testing.T, name string) int {
	t.Helper()
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	c := &exec.Cmd{Path: path, Args: []string{name, "30"}}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c.Process.Pid
}

// TestSweepMatchesWholeDirectory: the sweeps (runProcs here, hs_sweep in
// the guard and on the Ansible host) take the processes naming the run's
// directory or a path in it, not those of another run whose directory
// merely starts with the same name (/x/run1 is not /x/run10), and a
// process gone between the listing and the read leaves nothing on the
// run's stderr.
func TestSweepMatchesWholeDirectory(t *testing.T) {
	dir := t.TempDir() + "/heatsible-c-apply-1"
	own, bare, other := namedSleep(t, dir+"/playbook.yml"), namedSleep(t, dir), namedSleep(t, dir+"0/playbook.yml")
	procs := runProcs(dir)
	if !slices.Contains(procs, own) || !slices.Contains(procs, bare) || slices.Contains(procs, other) {
		t.Errorf("runProcs(%s) = %v, want %d and %d, not %d (%s0)", dir, procs, own, bare, other, dir)
	}
	procs = runProcs(dir + "0")
	if !slices.Contains(procs, other) || slices.Contains(procs, own) || slices.Contains(procs, bare) {
		t.Errorf("runProcs(%s0) = %v, want %d only", dir, procs, other)
	}

	// Short-lived processes all along, so that some are gone between the
	// sweep's listing of /proc and its read of their command lines.
	busy := exec.Command("/bin/sh", "-c", "while :; do /bin/true; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Process.Kill(); _ = busy.Wait() }()
	var stderr strings.Builder
	script := sweepFunc(dir+"0") + "for i in 1 2 3 4 5; do hs_sweep 0; echo \"found=$hs_found\"; done\n" +
		sweepFunc(dir) + "hs_sweep TERM\n"
	sh := exec.Command("/bin/sh", "-c", script)
	sh.Stderr = &stderr
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if got := strings.Count(string(out), "found=1\n"); got != 5 {
		t.Errorf("hs_sweep 0 found %s0/playbook.yml %d times of 5: %s", dir, got, out)
	}
	if stderr.Len() > 0 {
		t.Errorf("hs_sweep wrote to the run's stderr: %s", stderr.String())
	}
	if gone(other, 0) {
		t.Errorf("hs_sweep TERM of %s hit %s0/playbook.yml", dir, dir)
	}
	if !gone(own, 5*time.Second) || !gone(bare, 5*time.Second) {
		t.Errorf("hs_sweep TERM of %s left its processes", dir)
	}
}

// gone says whether pid has ended (a zombie until its Cmd is waited for)
// within wait.
func gone(pid int, wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestStopGraceIsTime: hs_stop kills what is left after its grace in
// seconds, however long each look through /proc takes (here 1 s, as on a
// busy host; counting pauses instead made a 1 s grace 6 s).
func TestStopGraceIsTime(t *testing.T) {
	slow := "hs_sweep() { hs_found=1; if [ \"$1\" = 0 ]; then sleep 1; else echo \"$1\"; fi; }\n"
	start := time.Now()
	c := exec.Command("/bin/sh", "-c", slow+stopFunc(1)+"hs_stop\n")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // hs_stop's "kill 0"
	out, err := c.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "TERM\nKILL\n" {
		t.Errorf("hs_stop sent %q, want TERM then KILL", out)
	}
	if took > 3500*time.Millisecond {
		t.Errorf("hs_stop with a grace of 1 s took %v", took)
	}
}

// TestGroupGuardExitStatus: the guard's exit status is ansible-playbook's,
// when it ends on its own and when a signal stopped the run.
func TestGroupGuardExitStatus(t *testing.T) {
	marker := t.TempDir()
	guard := func(arg ...string) *exec.Cmd {
		c := exec.Command("/bin/sh", append([]string{"-c", groupGuard(marker), "sh"}, arg...)...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c
	}
	code := func(err error) int {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if got := code(guard("/bin/sh", "-c", "exit 4").Run()); got != 4 {
		t.Errorf("exit 4: the guard exited %d", got)
	}
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"trap 'exit 5' TERM; sleep 30 & wait", 5},
		{"exec sleep 30", 128 + 15},
	} {
		c := guard("/bin/sh", "-c", tc.script)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		_ = c.Process.Signal(syscall.SIGTERM)
		if got := code(c.Wait()); got != tc.want {
			t.Errorf("%s, SIGTERM: the guard exited %d, want %d", tc.script, got, tc.want)
		}
	}
}

// TestSweepRemovesAskpassShm: a run's process that a stop signals (the
// guard's hs_sweep, heatsible's signalRun) loses the shared memory in which
// ansible-core 2.19 hands its ssh the node's password (its environment's
// _ANSIBLE_SSH_ASKPASS_SHM): the worker that would remove it dies without
// its finally block. A look (SIG 0) removes nothing, nor a name that is not
// SharedMemory's.
func TestSweepRemovesAskpassShm(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	for _, how := range []string{"hs_sweep", "signalRun"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir() + "/heatsible-c-apply-1"
			// a stand-in for ssh: its command line names the run's
			// known_hosts, as 2.19's ssh does
			path := t.TempDir() + "/ssh-like"
			if err := os.WriteFile(path, []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			name := "psm_heatsibletest" + strconv.Itoa(os.Getpid()) + strings.ReplaceAll(how, "_", "")
			shm := "/dev/shm/" + name
			if err := os.WriteFile(shm, []byte(`{"password": "x"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(shm) })
			c := &exec.Cmd{Path: path, Args: []string{path, "-o", "UserKnownHostsFile=" + dir + "/known_hosts", "30"},
				Env: []string{"_ANSIBLE_SSH_ASKPASS_SHM=" + name}}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
			look := exec.Command("/bin/sh", "-c", sweepFunc(dir)+"hs_sweep 0; echo \"found=$hs_found\"")
			if out, err := look.Output(); err != nil || strings.TrimSpace(string(out)) != "found=1" {
				t.Fatalf("hs_sweep 0: %q %v, want found=1", out, err)
			}
			if _, err := os.Stat(shm); err != nil {
				t.Fatalf("a look removed %s: %v", shm, err)
			}
			if how == "hs_sweep" {
				if out, err := exec.Command("/bin/sh", "-c", sweepFunc(dir)+"hs_sweep TERM").CombinedOutput(); err != nil {
					t.Fatalf("hs_sweep TERM: %v\n%s", err, out)
				}
			} else {
				_ = signalRun(c.Process.Pid, dir, syscall.SIGTERM)
			}
			if _, err := os.Stat(shm); !os.IsNotExist(err) {
				t.Errorf("%s left %s after signalling its ssh (%v)", how, shm, err)
			}
		})
	}
}
