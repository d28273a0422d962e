package ansible

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// hostileEnv is what a login on an Ansible host that someone else
// configured may carry (/etc/environment, ~/.bashrc, ~/.ssh/environment):
// host key checking off, another ansible.cfg, callback, roles path, Python
// path. None of it may reach ansible-playbook.
func hostileEnv(t *testing.T) map[string]string {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "evil.cfg")
	if err := os.WriteFile(cfg, []byte("[defaults]\nhost_key_checking = False\nstdout_callback = minimal\n[ssh_connection]\nssh_args = -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	insecure := "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
	return map[string]string{
		"ANSIBLE_SSH_ARGS":          insecure,
		"ANSIBLE_SSH_COMMON_ARGS":   insecure,
		"ANSIBLE_SSH_EXTRA_ARGS":    insecure,
		"ANSIBLE_HOST_KEY_CHECKING": "False",
		"ANSIBLE_CONFIG":            cfg,
		"ANSIBLE_STDOUT_CALLBACK":   "minimal",
		"ANSIBLE_ROLES_PATH":        dir,
		"PYTHONPATH":                dir,
		"OS_PASSWORD":               "openstack-secret",
		"SSH_AUTH_SOCK":             filepath.Join(dir, "agent"),
		"EVIL":                      "1",
		"LC_TIME":                   "C.UTF-8",
		"TMPDIR":                    dir,
	}
}

func TestCleanEnv(t *testing.T) {
	got := cleanEnv([]string{"PATH=/bin", "HOME=/root", "ANSIBLE_SSH_ARGS=-o StrictHostKeyChecking=no", "LANG=C.UTF-8", "LC_ALL=C", "LC_EVIL=x",
		"TMPDIR=/t", "OS_PASSWORD=x", "SSH_AUTH_SOCK=/s", "PYTHONPATH=/p", "PATHX=1", "=weird"})
	want := []string{"PATH=/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/t"}
	if !slices.Equal(got, want) {
		t.Errorf("cleanEnv = %q, want %q", got, want)
	}
}

func TestRunEnvPinsSSH(t *testing.T) {
	b := &Bundle{spec: BundleSpec{Forks: 50}}
	pins := `-o UserKnownHostsFile="/stage/known_hosts" -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes`
	for _, foreign := range []bool{false, true} {
		env := runEnv(b, "/stage", PlaybookOptions{ForeignConfig: foreign})
		joined := strings.Join(env, "\n")
		if strings.Contains(strings.ToLower(joined), "pass") {
			t.Errorf("run env (foreign config %v) has a password: %q", foreign, joined)
		}
		// Whatever ansible.cfg applies, host keys are checked against the
		// bundle's known_hosts, first on ssh's command line, and results
		// come as heatsible's callback writes them, from the bundle.
		for _, want := range []string{"ANSIBLE_SSH_ARGS=" + pins + " ", "ANSIBLE_HOST_KEY_CHECKING=True", "ANSIBLE_STDOUT_CALLBACK=heatsible_jsonl",
			"ANSIBLE_CALLBACK_PLUGINS=/stage/callback_plugins:"} {
			if !strings.Contains(joined, want) {
				t.Errorf("run env (foreign config %v) lacks %s: %q", foreign, want, joined)
			}
		}
		if got := strings.Contains(joined, "ANSIBLE_CONFIG="); got == foreign {
			t.Errorf("foreign config %v: ANSIBLE_CONFIG set = %v", foreign, got)
		}
	}
	if cfg := string((&Bundle{spec: BundleSpec{Forks: 1, Timeout: 1}}).Config("/stage")); !strings.Contains(cfg, "\nssh_args = "+pins+" ") {
		t.Errorf("ansible.cfg does not put the pins first in ssh_args:\n%s", cfg)
	}
}

// envDumper is a stand-in for ansible-playbook that writes its environment
// to out, one variable a line.
func envDumper(t *testing.T, out string) string {
	p := filepath.Join(t.TempDir(), "ansible-playbook")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nenv > '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func readEnvFile(t *testing.T, p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// sh may add PWD (and dash nothing else) after env -i; it is not
		// inherited.
		if l != "" && !strings.HasPrefix(l, "PWD=") {
			env = append(env, l)
		}
	}
	slices.Sort(env)
	return env
}

// wantEnv is the whole environment ansible-playbook may get in a run from
// a caller environment of keep plus anything hostile.
func wantEnv(b *Bundle, root string, opts PlaybookOptions, keep ...string) []string {
	want := append(slices.Clone(keep), runEnv(b, root, opts)...)
	slices.Sort(want)
	return want
}

// TestLocalEnvIsClean: ansible-playbook started by LocalRunner sees
// keptEnv and runEnv, nothing else of heatsible's environment.
func TestLocalEnvIsClean(t *testing.T) {
	for k, v := range hostileEnv(t) {
		t.Setenv(k, v)
	}
	t.Setenv("HOME", "/home/op")
	t.Setenv("LANG", "C.UTF-8")
	os.Unsetenv("LC_ALL")
	for _, foreign := range []bool{false, true} {
		spec := minimalSpec(t)
		b, err := NewBundle(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		out := filepath.Join(t.TempDir(), "env")
		opts := PlaybookOptions{Binary: envDumper(t, out), ForeignConfig: foreign}
		if _, err := (LocalRunner{}).Run(context.Background(), b, opts); err != nil {
			t.Fatal(err)
		}
		want := wantEnv(b, b.Dir, opts, "PATH="+os.Getenv("PATH"), "HOME=/home/op", "LANG=C.UTF-8", "LC_TIME=C.UTF-8", "TMPDIR="+os.Getenv("TMPDIR"))
		if got := readEnvFile(t, out); !slices.Equal(got, want) {
			t.Errorf("foreign config %v: ansible-playbook's environment\n%s\nwant\n%s", foreign, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestRemoteEnvIsClean runs remoteScript as the Ansible host's login shell
// would, in a hostile environment: ansible-playbook sees the session's
// keptEnv variables and runEnv, nothing else.
func TestRemoteEnvIsClean(t *testing.T) {
	spec := minimalSpec(t)
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, foreign := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "env")
		opts := PlaybookOptions{Binary: envDumper(t, out), ForeignConfig: foreign}
		argv, err := Command(b, b.Dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", remoteScript(unlockedStage(t), b.Dir, argv, runEnv(b, b.Dir, opts)))
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/ansible", "LC_ALL=C.UTF-8", "LANG=it's \"quoted\" $HOME"}
		hostile := hostileEnv(t)
		for k, v := range hostile {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("remote script: %v\n%s", err, b)
		}
		want := wantEnv(b, b.Dir, opts, "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/ansible", "LC_ALL=C.UTF-8", "LANG=it's \"quoted\" $HOME",
			"LC_TIME=C.UTF-8", "TMPDIR="+hostile["TMPDIR"])
		if got := readEnvFile(t, out); !slices.Equal(got, want) {
			t.Errorf("foreign config %v: ansible-playbook's environment on the Ansible host\n%s\nwant\n%s", foreign, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestHostKeyPinnedInHostileEnv runs the real ansible-playbook over real
// ssh to a real sshd, locally and through the remote script, in the hostile
// environment (StrictHostKeyChecking=no in ANSIBLE_SSH_ARGS and friends,
// another ansible.cfg): a host whose key is not the bundle's known_hosts
// key is refused, one whose key is goes through, and the output is still
// the jsonl events.
func TestHostKeyPinnedInHostileEnv(t *testing.T) {
	needAnsible(t)
	srv := remotetest.Start(t)
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, err := ssh.NewSignerFromKey(other)
	if err != nil {
		t.Fatal(err)
	}
	inv := "all:\n  hosts:\n    node-a:\n      ansible_host: 127.0.0.1\n      ansible_port: " + strings.TrimPrefix(srv.Addr, "127.0.0.1:") +
		"\n      ansible_user: root\n      ansible_ssh_private_key_file: " + srv.RootKeyFile + "\n"
	pb := "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: Who\n      ansible.builtin.raw: id -un\n      changed_when: false\n"
	keys := map[string]ssh.PublicKey{"right key": srv.HostKeys[0], "changed key": otherSigner.PublicKey()}
	for _, where := range []string{"local", "remote script"} {
		for name, key := range keys {
			t.Run(where+"/"+name, func(t *testing.T) {
				hostile := hostileEnv(t)
				spec := BundleSpec{Cluster: "c", Operation: "op", BaseDir: t.TempDir(), Inventory: []byte(inv), Playbook: []byte(pb),
					KnownHosts: []byte(srv.KnownHostsLine(key) + "\n"), KnownHostsFor: []string{srv.Addr}, Forks: 1, Timeout: 10}
				b, err := NewBundle(spec)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				// A home of its own: no ControlPersist master of another
				// subtest; a short path: ssh's ControlPath is a socket.
				home, err := os.MkdirTemp("", "hk")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(home)
				var code int
				var events int
				var output string
				if where == "local" {
					for k, v := range hostile {
						t.Setenv(k, v)
					}
					t.Setenv("HOME", home)
					res, err := (LocalRunner{}).Run(context.Background(), b, PlaybookOptions{})
					if res == nil {
						t.Fatalf("no result: %v", err)
					}
					code, events = res.ExitCode, len(res.Events)
					output = res.Stderr
					for _, e := range res.Events {
						output += e.Msg + "\n"
					}
					if err != nil {
						output += err.Error()
					}
				} else {
					argv, err := Command(b, b.Dir, PlaybookOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cmd := exec.Command("/bin/sh", "-c", remoteScript(unlockedStage(t), b.Dir, argv, runEnv(b, b.Dir, PlaybookOptions{})))
					cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
					for k, v := range hostile {
						cmd.Env = append(cmd.Env, k+"="+v)
					}
					var stdout, stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					err = cmd.Run()
					var ee *exec.ExitError
					if err != nil && !errors.As(err, &ee) {
						t.Fatal(err)
					}
					code = cmd.ProcessState.ExitCode()
					events = strings.Count(stdout.String(), `{"_event"`)
					output = stdout.String() + stderr.String()
				}
				if events == 0 {
					t.Errorf("no jsonl events: the callback was not heatsible's\n%s", output)
				}
				switch name {
				case "right key":
					if code != 0 {
						t.Errorf("exit %d, want 0\n%s", code, output)
					}
				case "changed key":
					if code != 4 || !strings.Contains(output, "CHANGED") {
						t.Errorf("exit %d, want 4 (unreachable: host key changed)\n%s", code, output)
					}
				}
			})
		}
	}
}

// unlockedStage is a staging directory with a marker nobody holds, for
// remoteScript run here: the local bundle's own marker is locked for the
// bundle's life (SweepStale), so the script's "flock -n" on it would fail.
func unlockedStage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHostKeyPinnedAgainstInventoryVars: a kubespray run reads the
// operator's inventory directory, whose group_vars and host_vars may set
// ansible_ssh_args (which replaces ssh_args, pinning and all), turn
// host_key_checking off, and add ssh_common_args/ssh_extra_args; kubespray's
// ansible.cfg turns checking off too. heatsible pins the ssh arguments and
// host key checking in extra vars, which beat every inventory variable: a
// changed key is still refused, the right one still works. On b6df54c the
// changed key connected (exit 0).
func TestHostKeyPinnedAgainstInventoryVars(t *testing.T) {
	needAnsible(t)
	srv := remotetest.Start(t)
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, err := ssh.NewSignerFromKey(other)
	if err != nil {
		t.Fatal(err)
	}
	insecure := "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null"
	vars := "ansible_ssh_args: \"" + insecure + "\"\nansible_ssh_common_args: \"" + insecure + "\"\nansible_ssh_extra_args: \"" + insecure + "\"\n" +
		"ansible_host_key_checking: false\nansible_ssh_host_key_checking: false\nansible_paramiko_host_key_checking: false\n"
	for name, key := range map[string]ssh.PublicKey{"right key": srv.HostKeys[0], "changed key": otherSigner.PublicKey()} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir() // kubespray's checkout
			invDir := filepath.Join(root, "inventory", "c")
			files := map[string]string{
				"ansible.cfg": "[defaults]\nhost_key_checking = False\n[ssh_connection]\nssh_args = " + insecure + "\n",
				"play.yml":    "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: Who\n      ansible.builtin.raw: id -un\n      changed_when: false\n",
				"inventory/c/hosts.yaml": "all:\n  hosts:\n    node-a:\n      ansible_host: 127.0.0.1\n      ansible_port: " + strings.TrimPrefix(srv.Addr, "127.0.0.1:") +
					"\n      ansible_user: root\n      ansible_ssh_private_key_file: " + srv.RootKeyFile + "\n",
				"inventory/c/group_vars/all/ssh.yml": vars,
				"inventory/c/host_vars/node-a.yml":   vars,
			}
			for p, content := range files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec := BundleSpec{Cluster: "c", Operation: "op", BaseDir: t.TempDir(), Inventory: []byte("all: {}\n"), Playbook: []byte("- hosts: all\n  tasks: []\n"),
				KnownHosts: []byte(srv.KnownHostsLine(key) + "\n"), KnownHostsFor: []string{srv.Addr}, Forks: 1, Timeout: 10}
			b, err := NewBundle(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			home, err := os.MkdirTemp("", "hk")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(home)
			t.Setenv("HOME", home)
			res, err := (LocalRunner{}).Run(context.Background(), b, PlaybookOptions{
				Dir: root, Playbooks: []string{"play.yml"}, ForeignConfig: true, Inventory: filepath.Join(invDir, "hosts.yaml"), Become: false})
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			output := res.Stderr
			for _, e := range res.Events {
				output += e.Msg + "\n"
			}
			switch name {
			case "right key":
				if res.ExitCode != 0 {
					t.Errorf("exit %d, want 0: %v\n%s", res.ExitCode, err, output)
				}
			case "changed key":
				if res.ExitCode != 4 || !strings.Contains(output, "CHANGED") {
					t.Errorf("exit %d, want 4 (unreachable: host key changed): %v\n%s", res.ExitCode, err, output)
				}
			}
		})
	}
}
