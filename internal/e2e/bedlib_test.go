package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	other := start("sleep", "60")                                                        // alive, not nspawn
	wrong := start(nspawn, "-c", "sleep 60; :", "sh", "--machine=hs-worker-1")           // nspawn, another host
	right := start(nspawn, "-c", "sleep 60; :", "sh", "--quiet", "--machine=hs-ghost-0") // this host
	time.Sleep(200 * time.Millisecond)                                                   // let the execs happen

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
			hd := filepath.Join(st, "hosts", "ghost-0")
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
			cmd := exec.Command("bash", "-c", `BED_LIB_ONLY=1; . "$1"; ST=$2; host_running ghost-0`, "bash",
				filepath.Join("..", "..", "testbed", "bin", "bed"), st)
			out, err := cmd.CombinedOutput()
			got := err == nil
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("host_running ghost-0 = %v, want %v (%s)", got, tc.want, out)
			}
		})
	}
}

// TestBedNeverSignalsAStalePid: stop_host and reap_host with a pid file
// that names a live process which is not the host's systemd-nspawn (the
// PID reused after a reboot) leave that process alone, do not wait for it,
// and remove the stale pid file. (Before, reap_host waited 20 s, then
// SIGKILLed it and its children.) The host is "ghost-0", which no bed has:
// reap_host also looks for the host's cgroups.
func TestBedNeverSignalsAStalePid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the bed's functions read other processes' /proc entries")
	}
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	st := t.TempDir()
	hd := filepath.Join(st, "hosts", "ghost-0")
	if err := os.MkdirAll(filepath.Join(hd, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(hd, "pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := exec.Command("bash", "-c", `BED_LIB_ONLY=1; . "$1"; ST=$2; stop_host ghost-0; reap_host ghost-0`, "bash",
		filepath.Join("..", "..", "testbed", "bin", "bed"), st).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// (a killed child of this test stays a zombie until waited for)
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(other.Process.Pid) + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
		t.Errorf("the unrelated process was killed (%v)\n%s", err, out)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the stale pid file is still there (%v)", err)
	}
	if took > 5*time.Second {
		t.Errorf("stop_host and reap_host took %s: they waited for a process that is not the host's", took.Round(time.Millisecond))
	}
}

// TestBedMasterHosts needs no bed: it sources testbed/bin/bed
// (BED_LIB_ONLY=1) and asks which hosts MASTERS=1 and MASTERS=3 want, in
// sorted order, with their addresses, and what MASTERS=2 is told.
func TestBedMasterHosts(t *testing.T) {
	bedSH := filepath.Join("..", "..", "testbed", "bin", "bed")
	lib := func(env string, script string) (string, error) {
		out, err := exec.Command("bash", "-c", env+` BED_LIB_ONLY=1; . "$1"; `+script, "bash", bedSH).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	hosts := `for h in $(want_hosts | sorted_hosts); do printf '%s=%s ' "$h" "$(ip_of "$h")"; done`
	for _, tc := range []struct{ masters, want string }{
		{"1", "ansible=10.231.0.10 storage=10.231.0.11 master-0=10.231.0.12 lb=10.231.0.13 worker-0=10.231.0.20 worker-1=10.231.0.21 worker-2=10.231.0.22"},
		{"3", "ansible=10.231.0.10 storage=10.231.0.11 master-0=10.231.0.12 master-1=10.231.0.14 master-2=10.231.0.15 lb=10.231.0.13 worker-0=10.231.0.20 worker-1=10.231.0.21 worker-2=10.231.0.22"},
	} {
		got, err := lib("MASTERS="+tc.masters+" WORKERS=2 SPARE_WORKERS=1 EXTERNAL_LB=1", `check_masters "$MASTERS"; `+hosts)
		if err != nil || got != tc.want {
			t.Errorf("MASTERS=%s: %q (%v), want %q", tc.masters, got, err, tc.want)
		}
	}
	for _, h := range []string{"master-1", "master-2"} {
		if _, err := lib("", `is_bed_host `+h); err != nil {
			t.Errorf("is_bed_host %s: %v", h, err)
		}
	}
	if _, err := lib("", `is_bed_host master-3`); err == nil {
		t.Error("is_bed_host master-3: yes, want no")
	}
	out, err := lib("MASTERS=2", `check_masters "$MASTERS"`)
	if want := "MASTERS=2: want 1 or 3 (master-0, or master-0..2 at 10.231.0.12, 10.231.0.14, 10.231.0.15)"; err == nil || !strings.Contains(out, want) {
		t.Errorf("MASTERS=2: %q (%v), want the error %q", out, err, want)
	}
}
