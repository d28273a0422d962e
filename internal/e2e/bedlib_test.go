package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestBedHostRunningChecksTheProcess needs no bed: it sources
// testbed/bin/bed (BED_LIB_ONLY=1) and asks host_running about pid files
// that name a live process which is not that host's systemd-nspawn. After
// the machine rebooted, master-0's stale pid file named a kworker; `bed up`
// took it for the running host, never started it, and waited 194 s for an
// sshd that was not there.
func TestBedHostRunningChecksTheProcess(t *testing.T) {
	dir := t.TempDir()
	// A stand-in launcher: sh under the name systemd-nspawn, with the
	// machine option in its argv as the bed passes it (the trailing ":"
	// keeps sh from exec'ing sleep, so the process keeps its name).
	nspawn := filepath.Join(dir, "systemd-nspawn")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	data, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nspawn, data, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(name string, args ...string) int {
		cmd := exec.Command(name, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	other := start("sleep", "60")                                                         // alive, not nspawn
	wrong := start(nspawn, "-c", "sleep 60; :", "sh", "--machine=hs-worker-1")            // nspawn, another host
	right := start(nspawn, "-c", "sleep 60; :", "sh", "--quiet", "--machine=hs-master-0") // this host
	time.Sleep(200 * time.Millisecond)                                                    // let the execs happen

	for _, tc := range []struct {
		name string
		pid  string
		want bool
	}{
		{"no pid file", "", false},
		{"empty pid file", "-", false},
		{"dead pid", "999999999", false},
		{"live pid of another program (the stale pid after a reboot)", strconv.Itoa(other), false},
		{"systemd-nspawn of another host", strconv.Itoa(wrong), false},
		{"systemd-nspawn of this host", strconv.Itoa(right), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := t.TempDir()
			hd := filepath.Join(st, "hosts", "master-0")
			if err := os.MkdirAll(hd, 0o755); err != nil {
				t.Fatal(err)
			}
			switch tc.pid {
			case "":
			case "-":
				os.WriteFile(filepath.Join(hd, "pid"), nil, 0o644)
			default:
				os.WriteFile(filepath.Join(hd, "pid"), []byte(tc.pid+"\n"), 0o644)
			}
			cmd := exec.Command("bash", "-c", `BED_LIB_ONLY=1; . "$1"; ST=$2; host_running master-0`, "bash",
				filepath.Join("..", "..", "testbed", "bin", "bed"), st)
			out, err := cmd.CombinedOutput()
			got := err == nil
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("host_running master-0 = %v, want %v (%s)", got, tc.want, out)
			}
		})
	}
}
