package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileParts are what the bed user's password must hold for
// TestHostilePassword (issue 17): Jinja that renders, Jinja that does not
// parse, quotes, a backslash, shell characters, a space.
var hostileParts = []string{"{{ 7*7 }}", "{% raw %}", "{#", "'", `"`, `\`, "$HOME", "`", "&<>", "%", " "}

func isHostile(pw string) bool {
	for _, p := range hostileParts {
		if !strings.Contains(pw, p) {
			return false
		}
	}
	return len(pw) >= 64
}

// canary is the file a password's lookup would create on the machine that
// runs Ansible if it were ever rendered as Jinja (the bed's generated
// password holds that lookup; so does the one set here).
const canary = "/tmp/heatsible-PWNED"

// bedHosts are the bed's host names (the first name of each line of its
// known_hosts: ansible, storage, master-0, lb, worker-N).
func (b *bed) bedHosts(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.dir, "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var hosts []string
	for _, l := range strings.Split(string(data), "\n") {
		name, _, _ := strings.Cut(strings.Fields(l + " x")[0], ",")
		if l != "" && !seen[name] {
			seen[name] = true
			hosts = append(hosts, name)
		}
	}
	return hosts
}

// setPassword sets the bed user's password on every host (chpasswd reads
// "user:password" up to the line's end, colons included).
func (b *bed) setPassword(t *testing.T, pw string) {
	t.Helper()
	for _, h := range b.bedHosts(t) {
		cmd := exec.Command(filepath.Join(b.root, "testbed", "bin", "bed"), "exec", h, "--", "chpasswd")
		cmd.Stdin = strings.NewReader(b.env["BED_USER"] + ":" + pw + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chpasswd on %s: %v\n%s", h, err, out)
		}
	}
}

// TestHostilePassword runs instantiate-end with every password of the
// request (Ansible host, masters, workers, storage server, load balancer)
// set to the bed user's password when that is hostile (the bed's generated
// default is), else to a hostile one set on every host for the test: every
// host is reached and the PVs are registered, so the password reached ssh,
// sshpass and sudo as typed; the lookup in it never ran.
func TestHostilePassword(t *testing.T) {
	b := needBed(t)
	pw := b.env["BED_PASSWORD"]
	if !isHostile(pw) {
		rnd := make([]byte, 8)
		if _, err := rand.Read(rnd); err != nil {
			t.Fatal(err)
		}
		pw = hex.EncodeToString(rnd) + " " + strings.Join(hostileParts, "") + " é {{ lookup('pipe', 'touch " + canary + "') }} {% endraw %}"
		t.Logf("the bed's password is not hostile: setting a hostile one (%d bytes) on every host for this test", len(pw))
		b.setPassword(t, pw)
		t.Cleanup(func() { b.setPassword(t, b.env["BED_PASSWORD"]) })
	}
	if !isHostile(pw) {
		t.Fatalf("the test's password is not hostile enough")
	}
	b.try("ansible", "rm", "-f", canary)
	os.Remove(canary)

	req := b.requestDoc(t)
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	set := 0
	for _, part := range []string{"ansible", "master_node", "worker_node", "storage_server", "external_lb_param"} {
		m, ok := k[part].(map[string]any)
		if !ok {
			continue
		}
		key := "password"
		if part == "external_lb_param" {
			key = "ssh_password"
		}
		m[key] = pw
		set++
	}
	if set < 4 {
		t.Fatalf("the bed's request has only %d of the password fields", set)
	}
	args := b.opArgs("instantiate-end")[2:] // human output: progress and the recap table
	args = setFlag(args, "--request", writeRequest(t, req))
	code, _, errs, took := b.heatsible(t, args...)
	recap := errs
	if i := strings.LastIndex(errs, "\nHOST"); i >= 0 {
		recap = errs[i:]
	}
	t.Logf("instantiate-end with a %d-byte hostile password: exit %d in %s\n%s", len(pw), code, took.Round(time.Millisecond), recap)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, tail(errs, 40))
	}
	for _, l := range strings.Split(strings.TrimSpace(recap), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 6 && (f[3] != "0" || f[4] != "0") {
			t.Errorf("recap: %s", l)
		}
	}
	if strings.Contains(errs, pw) {
		t.Error("the password is in heatsible's output")
	}
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "")
	if out, err := b.try("ansible", "test", "-e", canary); err == nil {
		t.Errorf("%s exists on the Ansible host: a password was rendered as Jinja %s", canary, out)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Errorf("%s exists on this machine: a password was rendered as Jinja", canary)
	}
}

// hostileAnsibleEnv is what the Ansible host's /etc/environment and the
// SSH user's ~/.bashrc set in TestHostileAnsibleHostEnv (issue 17).
var hostileAnsibleEnv = [][2]string{
	{"ANSIBLE_SSH_ARGS", "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
	{"ANSIBLE_SSH_COMMON_ARGS", "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
	{"ANSIBLE_HOST_KEY_CHECKING", "False"},
	{"ANSIBLE_CONFIG", "/etc/heatsible-hostile/ansible.cfg"},
	{"ANSIBLE_STDOUT_CALLBACK", "minimal"},
}

// hostileAnsibleHost sets the hostile environment up on the Ansible host and
// removes its /etc/ssh/ssh_known_hosts (a real Ansible host has none; the
// bed's lists every node, which would hide the hole); the test's cleanup
// puts everything back.
func (b *bed) hostileAnsibleHost(t *testing.T) {
	t.Helper()
	home := "/home/" + b.env["BED_USER"]
	var etc, rc bytes.Buffer
	for _, kv := range hostileAnsibleEnv {
		fmt.Fprintf(&etc, "%s=\"%s\"\n", kv[0], kv[1])
		fmt.Fprintf(&rc, "export %s='%s'\n", kv[0], kv[1])
	}
	etc.WriteString("HEATSIBLE_HOSTILE_ETC=1\n")
	rc.WriteString("export HEATSIBLE_HOSTILE_BASHRC=1\n")
	cfg := "[defaults]\nhost_key_checking = False\nstdout_callback = minimal\n[ssh_connection]\nssh_args = -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n"
	// The exports go first in ~/.bashrc: Debian's returns early for
	// non-interactive shells, and bash reads it for ssh commands.
	script := `set -e
b=/root/.heatsible-hostile-backup; mkdir -p $b
cp -p /etc/environment $b/environment; cp -p "$1/.bashrc" $b/bashrc; mv /etc/ssh/ssh_known_hosts $b/ssh_known_hosts
printf '%s' "$2" >> /etc/environment
{ printf '%s' "$3"; cat $b/bashrc; } > "$1/.bashrc"
mkdir -p /etc/heatsible-hostile; printf '%s' "$4" > /etc/heatsible-hostile/ansible.cfg`
	t.Cleanup(func() {
		if out, err := b.try("ansible", "sh", "-c", `b=/root/.heatsible-hostile-backup; [ -d $b ] || exit 0
cp -p $b/environment /etc/environment; cp -p $b/bashrc "$1/.bashrc"; mv $b/ssh_known_hosts /etc/ssh/ssh_known_hosts
rm -rf /etc/heatsible-hostile $b`, "sh", home); err != nil {
			t.Errorf("restoring the Ansible host: %v\n%s", err, out)
		}
	})
	b.exec(t, "ansible", "sh", "-c", script, "sh", home, etc.String(), rc.String(), cfg)

	// The environment is really there for an SSH command of the bed user,
	// as heatsible's session gets it.
	cmd := exec.Command("sshpass", "-e", "ssh", "-o", "UserKnownHostsFile="+filepath.Join(b.dir, "known_hosts"), "-o", "StrictHostKeyChecking=yes",
		"-o", "PubkeyAuthentication=no", "-o", "LogLevel=ERROR", b.env["BED_USER"]+"@10.231.0.10", "env")
	cmd.Env = append(os.Environ(), "SSHPASS="+b.env["BED_PASSWORD"])
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh to the Ansible host: %v", err)
	}
	for _, want := range []string{"HEATSIBLE_HOSTILE_ETC=1", "HEATSIBLE_HOSTILE_BASHRC=1", "ANSIBLE_SSH_ARGS=-o StrictHostKeyChecking=no", "ANSIBLE_CONFIG=/etc/heatsible-hostile/ansible.cfg"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("an SSH session on the Ansible host lacks %s; the hostile environment is not in place:\n%s", want, out)
		}
	}
	if out, err := b.try("ansible", "test", "-e", "/etc/ssh/ssh_known_hosts"); err == nil {
		t.Fatalf("the Ansible host still has /etc/ssh/ssh_known_hosts %s", out)
	}
}

// forgetMasters removes the control sockets of Ansible's SSH master
// connections on the Ansible host, so that the next run opens (and
// verifies) its own connections; the old masters go away on their own
// after ControlPersist.
func (b *bed) forgetMasters(t *testing.T) {
	t.Helper()
	b.try("ansible", "sh", "-c", `rm -f /home/*/.ansible/cp/* /root/.ansible/cp/*`)
}

// regenerateHostKey gives a host new SSH host keys, as a rebuilt VM has;
// the cleanup puts the old ones back.
func (b *bed) regenerateHostKey(t *testing.T, host string) {
	t.Helper()
	t.Cleanup(func() {
		if out, err := b.try(host, "sh", "-c", `b=/root/.heatsible-hostkeys; [ -d $b ] || exit 0
rm -f /etc/ssh/ssh_host_*; cp -p $b/ssh_host_* /etc/ssh/ && rm -rf $b && systemctl restart ssh.service`); err != nil {
			t.Errorf("restoring the host keys of %s: %v\n%s", host, err, out)
		}
		b.forgetMasters(t)
	})
	b.exec(t, host, "sh", "-c", `set -e; b=/root/.heatsible-hostkeys; mkdir -p $b; cp -p /etc/ssh/ssh_host_* $b/
rm -f /etc/ssh/ssh_host_*; ssh-keygen -A >/dev/null; systemctl restart ssh.service`)
}

// TestHostileAnsibleHostEnv: with ANSIBLE_SSH_ARGS/ANSIBLE_SSH_COMMON_ARGS
// turning host key checking off, ANSIBLE_HOST_KEY_CHECKING=False, another
// ANSIBLE_CONFIG and ANSIBLE_STDOUT_CALLBACK in the Ansible host's
// /etc/environment and the SSH user's ~/.bashrc, and no
// /etc/ssh/ssh_known_hosts there, a normal run still works and prints its
// live progress, and a worker whose host key was regenerated is refused
// with exit code 3 and "host key of ADDR CHANGED".
func TestHostileAnsibleHostEnv(t *testing.T) {
	b := needBed(t)
	b.hostileAnsibleHost(t)
	args := b.opArgs("instantiate-end")[2:] // human output: live progress

	t.Run("normal run", func(t *testing.T) {
		r := b.start(t, "", args...)
		// Progress while the run goes on: the jsonl callback was used, not
		// the environment's.
		r.waitFor(t, "== ", 3*time.Minute)
		r.waitFor(t, " ok   ", 3*time.Minute) // a task result line
		select {
		case <-r.done:
			t.Errorf("the first task result was printed only when the run had ended")
		default:
		}
		code, _, errs, took := r.wait(t, 10*time.Minute)
		t.Logf("normal run: exit %d in %s\n%s", code, took.Round(time.Millisecond), tail(errs, 12))
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 40))
		}
	})

	t.Run("changed host key", func(t *testing.T) {
		worker := b.nodeAt(t, "10.231.0.20") // worker-0, reached at its floating IP
		b.regenerateHostKey(t, "worker-0")
		// Ansible's SSH master connections of the run above (ControlPersist)
		// were verified when they opened; a rebuilt VM has dropped them.
		b.forgetMasters(t)
		code, _, errs, _ := b.heatsible(t, args...)
		t.Logf("run with worker-0's host key regenerated: exit %d\n%s", code, errorOf(errs))
		if code != 3 {
			t.Fatalf("exit %d, want 3\n%s", code, tail(errs, 30))
		}
		for _, want := range []string{worker, "host key of 10.231.1.20 CHANGED"} {
			if !strings.Contains(errs, want) {
				t.Errorf("the error does not say %q:\n%s", want, tail(errs, 10))
			}
		}
	})
}
