package ansible

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// remoteRunner connects to a real sshd on loopback; the "Ansible host" is
// this machine, so the test can look at the staging directory directly.
func remoteRunner(t *testing.T) (*RemoteRunner, string) {
	t.Helper()
	needAnsible(t)
	srv := remotetest.Start(t)
	c, err := remote.Dial(context.Background(), remote.Config{
		Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
		KnownHostsFile: srv.KnownHostsFile, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	base := filepath.Join(t.TempDir(), "runs")
	return &RemoteRunner{Client: c, BaseDir: base}, base
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("staging directory left behind: %s", filepath.Join(dir, e.Name()))
	}
}

func TestRemoteRunner(t *testing.T) {
	rr, base := remoteRunner(t)
	tests := []struct {
		name      string
		hosts     map[string]string
		cancel    bool
		wantIs    error
		wantRecap map[string]HostRecap
	}{
		{
			name:      "success",
			hosts:     map[string]string{"node-a": ""},
			wantRecap: map[string]HostRecap{"node-a": {OK: 4, Changed: 2, Skipped: 4}},
		},
		{
			name:      "host fails",
			hosts:     map[string]string{"node-a": "probe_fail: true"},
			wantIs:    ErrHostFailed,
			wantRecap: map[string]HostRecap{"node-a": {OK: 4, Changed: 2, Skipped: 3, Failed: 1}},
		},
		{
			name:   "cancelled",
			hosts:  map[string]string{"node-a": "probe_sleep: 119"},
			cancel: true,
			wantIs: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			b, err := NewBundle(probeSpec(t, work, tt.hosts))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rec recorder
			var staged string
			opts := RunOptions{OnEvent: func(e Event) {
				rec.on(e)
				if tt.cancel && e.Kind == KindTaskStart && e.Task == "probe : Take a while" {
					// The staging dir exists while ansible runs.
					if m, _ := filepath.Glob(filepath.Join(base, "heatsible-test-probe-*")); len(m) == 1 {
						staged = m[0]
						for rel, want := range map[string]os.FileMode{".": os.ModeDir | 0o700, SecretsFile: 0o600} {
							if st, err := os.Stat(filepath.Join(staged, rel)); err != nil || st.Mode() != want {
								t.Errorf("staged %s: %v, %v; want %v", rel, st.Mode(), err, want)
							}
						}
						if cfg, _ := os.ReadFile(filepath.Join(staged, ConfigFile)); !strings.Contains(string(cfg), "roles_path = "+staged+"/roles") {
							t.Errorf("staged ansible.cfg not rendered for %s:\n%s", staged, cfg)
						}
					}
					time.Sleep(500 * time.Millisecond)
					cancel()
				}
			}}
			res, err := rr.Run(ctx, b, opts)
			if tt.wantIs == nil && err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("Run = %v, want %v", err, tt.wantIs)
			}
			if res == nil {
				t.Fatal("no result")
			}
			if !strings.HasPrefix(res.StagingDir, base+"/heatsible-test-probe-") {
				t.Errorf("staging dir %q, want under %s", res.StagingDir, base)
			}
			if tt.wantRecap != nil && !mapsEqual(res.Recap, tt.wantRecap) {
				t.Errorf("recap %+v, want %+v\nstderr: %s", res.Recap, tt.wantRecap, res.Stderr)
			}
			if len(rec.events) == 0 || len(rec.events) != len(res.Events) {
				t.Errorf("%d live events, %d in the result", len(rec.events), len(res.Events))
			}
			if tt.cancel {
				if staged == "" {
					t.Error("did not see the staging directory during the run")
				}
				waitNoProcess(t, "sleep 119")
			} else if got, _ := os.ReadFile(filepath.Join(work, "node-a.secret")); string(got) != testSecret {
				t.Errorf("secret on the host %q", got)
			}
			assertEmptyDir(t, base)
		})
	}
}

func TestRemoteRunnerUsesWorkingDir(t *testing.T) {
	rr, base := remoteRunner(t)
	// Like kubespray: a playbook outside the bundle, relative to Dir.
	kubespray := t.TempDir()
	if err := os.WriteFile(filepath.Join(kubespray, "cluster.yml"), []byte(`- name: Kubespray stand-in
  hosts: all
  gather_facts: false
  tasks:
    - name: Where am I
      ansible.builtin.command: pwd
      register: where
      changed_when: false
    - name: Report
      ansible.builtin.debug:
        msg: "{{ where.stdout }}"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := probeSpec(t, t.TempDir(), map[string]string{"node-a": ""})
	spec.Playbook = nil
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := rr.Run(context.Background(), b, RunOptions{Dir: kubespray, Playbooks: []string{"cluster.yml"}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res.Stderr)
	}
	var msg string
	for _, e := range res.Events {
		if e.Task == "Report" {
			msg = e.Msg
		}
	}
	if msg != kubespray {
		t.Errorf("ran in %q, want %q", msg, kubespray)
	}
	assertEmptyDir(t, base)
}

func TestCleanupStale(t *testing.T) {
	rr, base := remoteRunner(t)
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock (util-linux) not found")
	}
	mk := func(name string, marker bool) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if marker {
			if err := os.WriteFile(filepath.Join(d, MarkerFile), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk("heatsible-c1-heal_end-aaaa", true)
	live := mk("heatsible-c1-scale_end-bbbb", true)
	other := mk("heatsible-c2-heal_end-cccc", true)
	foreign := mk("heatsible-c1-not-ours", false)

	// A live run holds the lock on its marker.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := exec.CommandContext(ctx, "flock", filepath.Join(live, MarkerFile), "sleep", "60")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = hold.Wait() }()
	time.Sleep(300 * time.Millisecond) // let flock take the lock

	// Too young for a one-hour threshold: nothing goes.
	removed, err := rr.CleanupStale(context.Background(), "c1", time.Hour)
	if err != nil || len(removed) != 0 {
		t.Fatalf("CleanupStale(1h) = %v, %v; want nothing removed", removed, err)
	}
	removed, err = rr.CleanupStale(context.Background(), "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{stale}) {
		t.Errorf("removed %v, want only %s", removed, stale)
	}
	for _, d := range []string{live, other, foreign} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s should have been kept: %v", d, err)
		}
	}
}

// A connection cut mid-run: Run reports it (ErrUnreachable, saying what
// happens to the staging directory), and the Ansible host itself stops the
// orphaned ansible-playbook and removes the staging directory, secrets
// included, without waiting for a next run.
func TestRemoteRunnerCutConnection(t *testing.T) {
	needAnsible(t)
	srv := remotetest.Start(t)
	c, err := remote.Dial(context.Background(), remote.Config{
		Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
		KnownHostsFile: srv.KnownHostsFile, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	base := filepath.Join(t.TempDir(), "runs")
	rr := &RemoteRunner{Client: c, BaseDir: base}
	b, err := NewBundle(probeSpec(t, t.TempDir(), map[string]string{"node-a": "probe_sleep: 118"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var staged []string
	_, err = rr.Run(context.Background(), b, RunOptions{OnEvent: func(e Event) {
		if e.Kind == KindTaskStart && e.Task == "probe : Take a while" {
			staged, _ = filepath.Glob(filepath.Join(base, "heatsible-test-probe-*", SecretsFile))
			time.Sleep(500 * time.Millisecond) // let the sleep start
			_ = rr.Client.Close()              // the network goes away
		}
	}})
	if !errors.Is(err, remote.ErrUnreachable) || !strings.Contains(err.Error(), "lost the connection to the Ansible host") {
		t.Fatalf("Run = %v, want remote.ErrUnreachable and 'lost the connection to the Ansible host'", err)
	}
	if len(staged) != 1 {
		t.Fatalf("secrets in the staging directory during the run: %v, want one", staged)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Dir(staged[0])); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there 30 s after the connection was cut", filepath.Dir(staged[0]))
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitNoProcess(t, "sleep 118")
	assertEmptyDir(t, base)
}

// Run first removes the staging directories earlier runs of the cluster
// left behind (an Ansible host that went down mid-run), not those of other
// clusters or of live runs (TestCleanupStale).
func TestRemoteRunnerRemovesLeftovers(t *testing.T) {
	rr, base := remoteRunner(t)
	left := filepath.Join(base, "heatsible-test-probe-left")
	other := filepath.Join(base, "heatsible-other-probe-left")
	for _, d := range []string{left, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, mode := range map[string]os.FileMode{MarkerFile: 0o600, SecretsFile: 0o600} {
			if err := os.WriteFile(filepath.Join(d, name), []byte("{}\n"), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := NewBundle(probeSpec(t, t.TempDir(), map[string]string{"node-a": ""}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := rr.Run(context.Background(), b, RunOptions{}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left by an earlier run is still there (%v)", left, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another cluster's %s was removed: %v", other, err)
	}
}

// The race TestRemoteRunnerCutConnection cannot force: once the session's
// sshd is gone, a run that writes dies of SIGPIPE before the watchdog's next
// poll (it polls every second), and the script then stops the watchdog. The
// script itself must remove the staging directory. Here the script runs as
// it does on the Ansible host, under a parent shell that stands in for sshd
// and is killed; the run writes a line every 20 ms to the pipe the test
// then closes.
func TestRemoteScriptRunDiesWithItsConnection(t *testing.T) {
	for i := 0; i < 5; i++ {
		stage := filepath.Join(t.TempDir(), "heatsible-test-stage")
		if err := os.Mkdir(stage, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stage, SecretsFile), []byte("secret: x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		writer := []string{"sh", "-c", "while :; do echo event || exit 1; sleep 0.02; done"}
		script := remoteScript(stage, stage, writer, nil)
		sshd := exec.Command("sh", "-c", `sh -c "$1" & wait`, "sh", script)
		out, err := sshd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sshd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Read(make([]byte, 6)); err != nil { // the run is writing
			t.Fatal(err)
		}
		_ = sshd.Process.Kill()
		_ = sshd.Wait() // reaps "sshd" (its /proc entry goes) and closes the pipe
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(stage); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("try %d: %s (secrets included) is still there 10 s after its connection died", i, stage)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
