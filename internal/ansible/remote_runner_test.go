package ansible

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// remoteRunner connects to a real sshd on loopback; the "Ansible host" is
// this machine, so the test can look at the staging directory directly.
func remoteRunner(t *testing.T) (*RemoteRunner, string) {
	t.Helper()
	rr, base, _ := remoteRunnerSrv(t)
	return rr, base
}

// remoteRunnerSrv is remoteRunner, with its sshd.
func remoteRunnerSrv(t *testing.T) (*RemoteRunner, string, *remotetest.Server) {
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
	return &RemoteRunner{Client: c, BaseDir: base}, base, srv
}

// dialAgain opens a second connection to rr's host: another machine.
func dialAgain(t *testing.T, srv *remotetest.Server) *remote.Client {
	t.Helper()
	c, err := remote.Dial(context.Background(), remote.Config{
		Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
		KnownHostsFile: srv.KnownHostsFile, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
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
			opts := PlaybookOptions{OnEvent: func(e Event) {
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
						if cfg, _ := os.ReadFile(filepath.Join(staged, ConfigFile)); !strings.Contains(string(cfg), "roles_path = "+staged+"/roles") ||
							!strings.Contains(string(cfg), "collections_path = "+staged+"/collections:") {
							t.Errorf("staged ansible.cfg not rendered for %s:\n%s", staged, cfg)
						}
						if _, err := os.Stat(filepath.Join(staged, "collections/ansible_collections/heatsible/nfv/galaxy.yml")); err != nil {
							t.Errorf("the collection was not staged: %v", err)
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
	res, err := rr.Run(context.Background(), b, PlaybookOptions{Dir: kubespray, Playbooks: []string{"cluster.yml"}})
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

// writeMarker makes dir a staging directory of cluster, marked as
// NewBundle marks it.
func writeMarker(t *testing.T, dir, cluster string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(map[string]string{"cluster": cluster, "operation": "heal-end", "created": "2026-11-22T09:00:00Z"})
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), append(m, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SecretsFile), []byte("x: y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// holdLock holds an flock on p (a file or a directory) until the test
// ends, as flock(1) does for a live run.
func holdLock(t *testing.T, p string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hold := execFlock(ctx, p, time.Minute)
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = hold.Wait() })
	if _, err := out.Read(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
}

// TestCleanupStale: only the cluster's own stale directories go, judged by
// the marker's cluster (not the name, which a longer cluster name can
// share: "a" is a prefix of "a-b", and names are cut to 40 characters),
// and never one whose run is alive: its ansible-playbook holds the marker,
// or its lock session holds the directory (from mktemp on, upload
// included).
func TestCleanupStale(t *testing.T) {
	rr, base := remoteRunner(t)
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock (util-linux) not found")
	}
	long := strings.Repeat("x", 40)
	tests := []struct {
		name    string
		cluster string // the marker's; "" for no marker, "{}" for a marker without one
		dir     string
		hold    string // "marker", "dir" or ""
		removed map[string]bool
	}{
		{name: "stale", cluster: "c1", dir: "heatsible-c1-heal_end-aaaa", removed: map[string]bool{"c1": true}},
		{name: "ansible-playbook alive", cluster: "c1", dir: "heatsible-c1-scale_end-bbbb", hold: "marker"},
		{name: "uploading", cluster: "c1", dir: "heatsible-c1-scale_end-eeee", hold: "dir"},
		{name: "other cluster", cluster: "c2", dir: "heatsible-c2-heal_end-cccc", removed: map[string]bool{"c2": true}},
		{name: "longer name, same prefix", cluster: "c1-b", dir: "heatsible-c1-b-heal_end-dddd", removed: map[string]bool{"c1-b": true}},
		{name: "no marker", dir: "heatsible-c1-not-ours"},
		{name: "marker names no cluster", cluster: "{}", dir: "heatsible-c1-heal_end-ffff"},
		{name: "cut name 1", cluster: long + "1", dir: "heatsible-" + long + "-heal_end-gggg", removed: map[string]bool{long + "1": true}},
		{name: "cut name 2", cluster: long + "2", dir: "heatsible-" + long + "-heal_end-hhhh", removed: map[string]bool{long + "2": true}},
	}
	for _, tt := range tests {
		d := filepath.Join(base, tt.dir)
		switch tt.cluster {
		case "":
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		case "{}":
			writeMarker(t, d, "c1")
			if err := os.WriteFile(filepath.Join(d, MarkerFile), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			writeMarker(t, d, tt.cluster)
		}
		switch tt.hold {
		case "marker":
			holdLock(t, filepath.Join(d, MarkerFile))
		case "dir":
			holdLock(t, d)
		}
	}

	// Too young for a one-hour threshold: nothing goes.
	removed, err := rr.CleanupStale(context.Background(), "c1", time.Hour)
	if err != nil || len(removed) != 0 {
		t.Fatalf("CleanupStale(1h) = %v, %v; want nothing removed", removed, err)
	}
	for _, cluster := range []string{"c1", "c1-b", long + "1", "c2", long + "2"} {
		removed, err := rr.CleanupStale(context.Background(), cluster, 0)
		if err != nil {
			t.Fatalf("CleanupStale(%s): %v", cluster, err)
		}
		var want []string
		for _, tt := range tests {
			if tt.removed[cluster] {
				want = append(want, filepath.Join(base, tt.dir))
			}
		}
		if !slices.Equal(removed, want) {
			t.Errorf("CleanupStale(%s) removed %v, want %v", cluster, removed, want)
		}
	}
	for _, tt := range tests {
		_, err := os.Stat(filepath.Join(base, tt.dir))
		if (len(tt.removed) == 0) != (err == nil) {
			t.Errorf("%s (%s): stat %v after every cluster's cleanup; want it kept: %v", tt.dir, tt.name, err, len(tt.removed) == 0)
		}
	}
}

// TestCleanupStaleSparesUploads: a run's staging directory is safe from
// its first moment. While cluster a-b's bundle uploads (its marker is
// there, its ansible-playbook has not started), cleanups of cluster a (a
// prefix of a-b) and of a-b itself, from another connection, leave it
// alone, and the run goes on to the end.
func TestCleanupStaleSparesUploads(t *testing.T) {
	rr, base, srv := remoteRunnerSrv(t)
	other := &RemoteRunner{Client: dialAgain(t, srv), BaseDir: base}

	spec := probeSpec(t, t.TempDir(), map[string]string{"node-a": ""})
	spec.Cluster = "a-b"
	// Big enough to catch its upload (after the marker, before the
	// blob's end) and stop it there: the process writing it on the
	// "Ansible host" (sshd's sftp session, here) is stopped while the
	// cleanups run.
	spec.Files = map[string][]byte{"big/blob": make([]byte, 64<<20)}
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		_, err := rr.Run(context.Background(), b, PlaybookOptions{})
		done <- err
	}()
	var stage string
	var writer []int
	deadline := time.Now().Add(time.Minute)
	for len(writer) == 0 {
		if m, _ := filepath.Glob(filepath.Join(base, "heatsible-a-b-probe-*", "big", "blob")); len(m) == 1 {
			stage = filepath.Dir(filepath.Dir(m[0]))
			writer = openedBy(m[0])
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before its upload was caught: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no upload caught within a minute")
		}
	}
	stopped := 0
	for _, pid := range writer {
		switch err := syscall.Kill(pid, syscall.SIGSTOP); {
		case err == nil:
			stopped++
		case !errors.Is(err, syscall.ESRCH):
			t.Fatal(err)
		}
	}
	if stopped == 0 {
		t.Fatalf("the processes writing the upload (%v) had exited before they could be stopped", writer)
	}
	cont := func() {
		for _, pid := range writer {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer cont()
	for _, cluster := range []string{"a", "a-b"} {
		removed, err := other.CleanupStale(context.Background(), cluster, 0)
		if err != nil || len(removed) > 0 {
			t.Errorf("CleanupStale(%s) during a-b's upload: removed %v, %v; want nothing", cluster, removed, err)
		}
	}
	// Upload copies several files at once, so secrets.yml may be there
	// already; the blob, stopped mid-way, tells that the upload was not
	// done.
	if st, err := os.Stat(filepath.Join(stage, "big", "blob")); err != nil || st.Size() == 64<<20 {
		t.Fatalf("the upload ended before the cleanups did; the test proved nothing")
	}
	cont()
	if err := <-done; err != nil {
		t.Fatalf("a-b's run: %v", err)
	}
	assertEmptyDir(t, base)
}

// TestCleanupStaleWithoutFlock: on an Ansible host without flock(1) a live
// run cannot be told from a stale one, so nothing is removed and the
// cleanup says why.
func TestCleanupStaleWithoutFlock(t *testing.T) {
	srv := remotetest.StartConfig(t, "SetEnv PATH="+pathWithout(t, "flock"))
	c, err := remote.Dial(context.Background(), remote.Config{
		Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
		KnownHostsFile: srv.KnownHostsFile, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if out, err := c.Output(context.Background(), "command -v flock || echo none"); err != nil || out != "none" {
		t.Fatalf("flock on the test host's PATH: %q %v", out, err)
	}
	base := filepath.Join(t.TempDir(), "runs")
	rr := &RemoteRunner{Client: c, BaseDir: base}
	stale := filepath.Join(base, "heatsible-c1-heal_end-aaaa")
	live := filepath.Join(base, "heatsible-c1-heal_end-bbbb")
	writeMarker(t, stale, "c1")
	writeMarker(t, live, "c1")
	holdLock(t, live) // a lock session holds it: it must stay
	removed, err := rr.CleanupStale(context.Background(), "c1", 0)
	if err == nil || !strings.Contains(err.Error(), "flock") || len(removed) > 0 {
		t.Errorf("CleanupStale without flock = %v, %v; want an error naming flock and nothing removed", removed, err)
	}
	for _, d := range []string{stale, live} {
		if _, err := os.Stat(filepath.Join(d, SecretsFile)); err != nil {
			t.Errorf("%s was touched: %v", d, err)
		}
	}
}

// openedBy lists the processes that have p open.
func openedBy(p string) []int {
	var pids []int
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == p {
			if pid, err := strconv.Atoi(strings.Split(fd, "/")[2]); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// pathWithout returns a directory that holds every command of this
// machine's /usr/bin, /usr/sbin, /bin and /sbin but the named ones: the
// PATH of a host that lacks them.
func pathWithout(t *testing.T, missing ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"} {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if slices.Contains(missing, e.Name()) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
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
	_, err = rr.Run(context.Background(), b, PlaybookOptions{OnEvent: func(e Event) {
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
	writeMarker(t, left, "test")
	writeMarker(t, other, "other")
	b, err := NewBundle(probeSpec(t, t.TempDir(), map[string]string{"node-a": ""}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := rr.Run(context.Background(), b, PlaybookOptions{}); err != nil {
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
		// Its own process group, as sshd gives each session: the watchdog's
		// "kill -TERM 0" must not reach this test.
		sshd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
		// The bound: the watchdog's poll (1 s) and its grace for a run that
		// ignores SIGTERM (watchdogGrace), with room for a loaded machine
		// (CI once saw more than 10 s). Usually it takes 0.1 s.
		bound := time.Duration(watchdogGrace+10) * time.Second
		deadline := time.Now().Add(bound)
		for {
			if _, err := os.Stat(stage); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				ps, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,stat,etime,args").Output()
				t.Fatalf("try %d: %s (secrets included) is still there %v after its connection died; processes:\n%s", i, stage, bound, ps)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestRemoteScriptConnectionGoneBeforeItLooks: the connection may drop
// before the script gets to start its watchdog (a loaded Ansible host: the
// run is already writing, heatsible is gone, sshd reaped). The run must
// still be stopped and the staging directory removed. Here "sshd" starts
// the script's shell, which takes sshd's pid as its $PPID at its start (as
// a real session's does) and then waits half a second, while "sshd" exits
// after 0.2 s and is reaped.
// Before the fix the watchdog was started only when sshd was still there,
// and the last cleanup only with a watchdog: the stage stayed (seen as
// TestRemoteScriptRunDiesWithItsConnection's rare failure under load).
func TestRemoteScriptConnectionGoneBeforeItLooks(t *testing.T) {
	stage := filepath.Join(t.TempDir(), "heatsible-test-stage")
	if err := os.Mkdir(stage, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, SecretsFile), []byte("secret: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writer := []string{"sh", "-c", "while :; do echo event || exit 1; sleep 0.02; done"}
	script := remoteScript(stage, stage, writer, nil)
	sshd := exec.Command("sh", "-c", `sh -c "sleep 0.5; $1" & sleep 0.2; exit 0`, "sh", script)
	sshd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := sshd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := sshd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	_ = out
	_ = sshd.Wait() // "sshd" exits at once: reaped, the pipe closed
	bound := time.Duration(watchdogGrace+10) * time.Second
	deadline := time.Now().Add(bound)
	for {
		if _, err := os.Stat(stage); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,etime,args", "-g", fmt.Sprint(pgid)).Output()
			t.Fatalf("%s (secrets included) is still there %v after its connection was gone; its session's processes:\n%s", stage, bound, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
