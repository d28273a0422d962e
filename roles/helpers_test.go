package roles

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// playLocal runs a one-play playbook with role on this machine (connection
// local, become: the helper roles probe as root) and returns its exit code
// and output.
func playLocal(t *testing.T, role, vars string) (int, string) {
	t.Helper()
	return playBook(t, "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: "+role+"\n", vars)
}

// needRootAnsible skips the test without ansible-playbook or without root
// (the roles probe through become) and returns this directory, the roles
// path.
func needRootAnsible(t *testing.T) string {
	t.Helper()
	roles := needAnsible(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the roles' probes run through become")
	}
	return roles
}

// needAnsible skips the test without ansible-playbook and returns this
// directory, the roles path.
func needAnsible(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	roles, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return roles
}

// playBook runs the playbook pb (YAML text) on this machine, connection
// local, with the roles of this directory, the extra vars (JSON) and env
// added to Ansible's environment; it returns the exit code and the output.
// It skips without ansible-playbook or root (the roles probe as root).
func playBook(t *testing.T, pb, vars string, env ...string) (int, string) {
	t.Helper()
	return playBookArgs(t, pb, vars, nil, env...)
}

// playBookArgs is playBook with more ansible-playbook arguments (--check).
func playBookArgs(t *testing.T, pb, vars string, args []string, env ...string) (int, string) {
	t.Helper()
	return runPlaybook(t, needRootAnsible(t), pb, vars, args, env...)
}

// runPlaybook is playBookArgs with the roles path given and without its
// need of root, for playbooks that never reach a task that probes (a role
// refused by its argument spec).
func runPlaybook(t *testing.T, roles, pb, vars string, args []string, env ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "site.yml"), []byte(pb), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", append([]string{"-i", "localhost,", "-c", "local", "-e", vars, "site.yml"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false"), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("ansible-playbook: %v\n%s", err, out)
	return 0, ""
}

// TestAptWaitTimesOut: a lock held (fcntl, by a process named apt-get)
// longer than apt_wait_timeout: the role says what it waits for, then fails
// naming the lock and its holder; the same lock released in time passes.
// (The bed's e2e TestFirstBootDpkgLock waits for the real thing, 60 s.)
func TestAptWaitTimesOut(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock-frontend")
	hold := func(seconds string) *exec.Cmd {
		cmd := exec.Command("python3", "-c", `
import ctypes, fcntl, os, sys, time
ctypes.CDLL(None).prctl(15, b"apt-get", 0, 0, 0)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))`, lock, seconds)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
			t.Fatalf("the lock holder did not start: %v %q", err, line)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	vars := `{"apt_wait_locks": ["` + lock + `"], "apt_wait_timeout": 3, "apt_wait_delay": 1}`

	h := hold("60")
	code, out := playLocal(t, "apt_wait", vars)
	pid := h.Process.Pid
	if code != 2 {
		t.Fatalf("exit %d, want 2 (the wait timed out)\n%s", code, out)
	}
	for _, want := range []string{
		"localhost: waiting for the lock " + lock + " (held by pid " + strconv.Itoa(pid) + ", apt-get), at most 3 s",
		"localhost: the lock " + lock + " (held by pid " + strconv.Itoa(pid) + ", apt-get) still held after 3 s. Nothing was installed. See what it does (ps -fp " + strconv.Itoa(pid) + ";",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	h.Process.Kill()
	h.Wait()

	// Released while the role waits (20 s: ansible-playbook takes seconds
	// to reach the probe on a loaded machine).
	hold("20")
	vars = `{"apt_wait_locks": ["` + lock + `"], "apt_wait_timeout": 120, "apt_wait_delay": 1}`
	if code, out = playLocal(t, "apt_wait", vars); code != 0 || !strings.Contains(out, "localhost: waited ") {
		t.Fatalf("exit %d, want 0 after a wait:\n%s", code, out)
	}
}

// TestAptWaitCheckMode: in check mode the probe and its line run ("would
// wait"), and the wait and apt-get update do not: raw and command skip
// themselves, and the reports follow their results.
func TestAptWaitCheckMode(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock-frontend")
	cmd := exec.Command("python3", "-c", `
import ctypes, fcntl, os, sys, time
ctypes.CDLL(None).prctl(15, b"apt-get", 0, 0, 0)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)`, lock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the lock holder did not start: %v %q", err, line)
	}
	pb := `- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.import_role: {name: apt_wait}
    - ansible.builtin.import_role: {name: apt_wait, tasks_from: update}
`
	// apt_cache_valid_time 0: a real run would run apt-get update
	vars := `{"apt_wait_locks": ["` + lock + `"], "apt_wait_timeout": 3, "apt_wait_delay": 1, "apt_cache_valid_time": 0}`
	code, got := playBookArgs(t, pb, vars, []string{"--check"})
	if code != 0 {
		t.Fatalf("exit %d, want 0 (check mode waits for nothing)\n%s", code, got)
	}
	want := "localhost: would wait for the lock " + lock + " (held by pid " + strconv.Itoa(cmd.Process.Pid) + ", apt-get), at most 3 s"
	if !strings.Contains(got, want) {
		t.Errorf("the output does not say %q:\n%s", want, got)
	}
	for _, task := range []string{"Wait for cloud-init and the dpkg lock", "Report the wait",
		"Refresh apt's package lists (apt-get update; a source that does not answer is left out)", "Report the apt sources that did not answer"} {
		if !regexp.MustCompile(`TASK \[apt_wait : ` + regexp.QuoteMeta(task) + `\] \**\nskipping: \[localhost\]`).MatchString(got) {
			t.Errorf("%q was not skipped in check mode:\n%s", task, got)
		}
	}
}

// TestKubeconfigRole: the first usable file of kubeconfig_search wins; none
// fails naming every path; a setting is the only candidate.
func TestKubeconfigRole(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "admin.conf")
	if err := os.WriteFile(conf, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none")
	tests := []struct {
		name, vars string
		code       int
		want       string
	}{
		{"found", `{"kubeconfig_search": ["` + none + `", "` + conf + `"], "kubectl_bin": "sh"}`, 0,
			"localhost: kubectl reads " + conf + " as root"},
		{"none", `{"kubeconfig_search": ["` + none + `", "` + dir + `"], "kubectl_bin": "sh"}`, 2,
			"no admin kubeconfig for kubectl on localhost: tried " + none + " (missing), " + dir + " (not a file). Nothing was changed."},
		{"setting only", `{"kubeconfig_search": ["` + conf + `"], "kubectl_kubeconfig": "` + none + `", "kubectl_bin": "sh"}`, 2,
			"the admin kubeconfig " + none + " given for kubectl is not usable on localhost: " + none + " (missing)."},
		{"no kubectl", `{"kubeconfig_search": ["` + conf + `"], "kubectl_bin": "heatsible-no-such-kubectl"}`, 2,
			"kubectl is not installed on localhost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := playLocal(t, "kubeconfig", tc.vars)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d saying %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}
