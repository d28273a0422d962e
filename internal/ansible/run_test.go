package ansible

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

func needAnsible(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH (install Debian's ansible to run the real-ansible tests)")
	}
}

// probeSpec stages the probe role against local "hosts" (connection
// local). hostVars adds per-host inventory variables.
func probeSpec(t *testing.T, workDir string, hostVars map[string]string) BundleSpec {
	t.Helper()
	var inv strings.Builder
	inv.WriteString("all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n")
	hosts := make([]string, 0, len(hostVars))
	for h := range hostVars {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		fmt.Fprintf(&inv, "    %s: {%s}\n", h, hostVars[h])
	}
	pb, err := os.ReadFile("testdata/playbook.yml")
	if err != nil {
		t.Fatal(err)
	}
	return BundleSpec{
		Cluster:   "test",
		Operation: "probe",
		BaseDir:   t.TempDir(),
		Inventory: []byte(inv.String()),
		Playbook:  pb,
		Roles:     os.DirFS("testdata/roles"),
		// a collection travels with the bundle (remote_runner_test looks)
		Collections: map[string]fs.FS{"heatsible.nfv": fstest.MapFS{"galaxy.yml": {Data: []byte("namespace: heatsible\nname: nfv\nversion: 1.0.0\n")}}},
		GroupVars:   map[string][]byte{"all": []byte("probe_dir: " + workDir + "\n")},
		Secrets:     []byte("heatsible_secrets:\n  probe_password: \"" + testSecret + "\"\n"),
		Forks:       5,
	}
}

// recorder collects live events with their arrival time.
type recorder struct {
	mu     sync.Mutex
	events []Event
	at     []time.Time
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.at = append(r.at, time.Now())
}

func (r *recorder) results(host string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Kind == KindResult && e.Host == host {
			out = append(out, e.Task+"="+string(e.Status))
		}
	}
	return out
}

func TestLocalRunner(t *testing.T) {
	needAnsible(t)
	tests := []struct {
		name      string
		hosts     map[string]string
		opts      PlaybookOptions
		wantRecap map[string]HostRecap
		wantSeq   map[string][]string // per host, result events in order
		wantIs    []error
		wantNot   []error
		wantExit  int
	}{
		{
			name:  "all ok",
			hosts: map[string]string{"node-a": ""},
			wantRecap: map[string]HostRecap{
				"node-a": {OK: 4, Changed: 2, Skipped: 4},
			},
			wantSeq: map[string][]string{"node-a": {
				"probe : Report ok=ok", "probe : Write file=changed", "probe : Never runs=skipped", "probe : Store the secret=changed",
				"probe : Record the environment ansible runs modules with=ok", "probe : Leak the secret into a message=skipped",
				"probe : Take a while=skipped", "probe : Fail on request=skipped",
			}},
		},
		{
			name:  "one host fails",
			hosts: map[string]string{"node-a": "", "node-b": "probe_fail: true"},
			wantRecap: map[string]HostRecap{
				"node-a": {OK: 4, Changed: 2, Skipped: 4},
				"node-b": {OK: 4, Changed: 2, Skipped: 3, Failed: 1},
			},
			wantIs:   []error{ErrHostFailed},
			wantNot:  []error{ErrUnreachable, ErrPlaybook},
			wantExit: 2,
		},
		{
			name: "unreachable host",
			// ssh to a port nothing listens on, with an empty known_hosts.
			hosts: map[string]string{"node-a": "", "node-u": "ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_user: nobody"},
			wantRecap: map[string]HostRecap{
				"node-a": {OK: 4, Changed: 2, Skipped: 4},
				"node-u": {OK: 1, Unreachable: 1}, // debug runs on the controller
			},
			wantIs:   []error{ErrUnreachable},
			wantNot:  []error{ErrHostFailed},
			wantExit: 4,
		},
		{
			name:      "limit",
			hosts:     map[string]string{"node-a": "", "node-b": "probe_fail: true"},
			opts:      PlaybookOptions{Limit: "node-a"},
			wantRecap: map[string]HostRecap{"node-a": {OK: 4, Changed: 2, Skipped: 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			b, err := NewBundle(probeSpec(t, work, tt.hosts))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var rec recorder
			opts := tt.opts
			opts.OnEvent = rec.on
			res, err := LocalRunner{}.Run(context.Background(), b, opts)
			if res == nil {
				t.Fatalf("Run: no result: %v", err)
			}
			if res.ExitCode != tt.wantExit {
				t.Errorf("exit code %d, want %d; err %v; stderr:\n%s", res.ExitCode, tt.wantExit, err, res.Stderr)
			}
			if len(tt.wantIs) == 0 && err != nil {
				t.Errorf("Run: %v", err)
			}
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("err %v is not %v", err, want)
				}
			}
			for _, not := range tt.wantNot {
				if errors.Is(err, not) {
					t.Errorf("err %v must not be %v", err, not)
				}
			}
			if !res.RecapComplete {
				t.Error("recap incomplete")
			}
			if !mapsEqual(res.Recap, tt.wantRecap) {
				t.Errorf("recap %+v, want %+v", res.Recap, tt.wantRecap)
			}
			for h, seq := range tt.wantSeq {
				if got := rec.results(h); !slices.Equal(got, seq) {
					t.Errorf("%s events:\n%q\nwant\n%q", h, got, seq)
				}
			}
			if len(rec.events) != len(res.Events) {
				t.Errorf("%d live events, %d in the result", len(rec.events), len(res.Events))
			}
			if tt.wantExit == 2 {
				var he *HostsError
				if !errors.As(err, &he) || !slices.Equal(he.Hosts, []string{"node-b"}) || !strings.Contains(err.Error(), "probe failure requested") {
					t.Errorf("error %v: want the failed host node-b and its message", err)
				}
			}
			if tt.wantExit == 4 && !slices.Equal(res.UnreachableHosts(), []string{"node-u"}) {
				t.Errorf("unreachable hosts %v", res.UnreachableHosts())
			}
		})
	}
}

func mapsEqual(a, b map[string]HostRecap) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLocalRunnerEventsAreLive(t *testing.T) {
	needAnsible(t)
	t.Parallel()
	b, err := NewBundle(probeSpec(t, t.TempDir(), map[string]string{"node-a": "probe_sleep: 3"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var rec recorder
	res, err := LocalRunner{}.Run(context.Background(), b, PlaybookOptions{OnEvent: rec.on})
	if err != nil {
		t.Fatal(err)
	}
	// "Write file" is reported before the 3 s task runs: it must reach us
	// well before ansible-playbook ends.
	for i, e := range rec.events {
		if e.Kind == KindResult && e.Task == "probe : Write file" {
			if lead := res.Finished.Sub(rec.at[i]); lead < 2*time.Second {
				t.Errorf("first results arrived only %v before the end: not streamed", lead)
			}
			break
		}
	}
	// Order: play start, then per task a start and its result.
	var kinds []string
	for _, e := range rec.events[:5] {
		kinds = append(kinds, string(e.Kind)+":"+e.Task)
	}
	want := []string{"play_start:", "task_start:probe : Report ok", "result:probe : Report ok", "task_start:probe : Write file", "result:probe : Write file"}
	if !slices.Equal(kinds, want) {
		t.Errorf("event order %q, want %q", kinds, want)
	}
	if rec.events[0].Play != "Probe" {
		t.Errorf("play name %q", rec.events[0].Play)
	}
}

func TestLocalRunnerCheckModeDiff(t *testing.T) {
	needAnsible(t)
	t.Parallel()
	work := t.TempDir()
	spec := probeSpec(t, work, map[string]string{"node-a": "probe_content: new-content"})
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var rec recorder
	res, err := LocalRunner{}.Run(context.Background(), b, PlaybookOptions{Check: true, Diff: true, OnEvent: rec.on})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "node-a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("check mode wrote the file: %v", err)
	}
	var write *Event
	for i := range res.Events {
		if res.Events[i].Task == "probe : Write file" && res.Events[i].Kind == KindResult {
			write = &res.Events[i]
		}
	}
	if write == nil || write.Status != StatusChanged {
		t.Fatalf("Write file event %+v: want would-change", write)
	}
	for _, want := range []string{"--- before\n+++ ", "@@ -0,0 +1 @@\n+new-content\n"} {
		if !strings.Contains(write.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, write.Diff)
		}
	}
	if hs := res.ChangedHosts(); !slices.Equal(hs, []string{"node-a"}) {
		t.Errorf("changed hosts %v", hs)
	}
}

func TestLocalRunnerSecretsStayOutOfArgvEnvAndOutput(t *testing.T) {
	needAnsible(t)
	t.Setenv("OS_PASSWORD", "openstack-secret-value")
	work := t.TempDir()
	b, err := NewBundle(probeSpec(t, work, map[string]string{"node-a": "probe_leak: true"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := os.Stat(filepath.Join(b.Dir, SecretsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file mode %v, %v; want 0600", st.Mode(), err)
	}
	var rec recorder
	var stderr strings.Builder
	res, err := LocalRunner{}.Run(context.Background(), b, PlaybookOptions{OnEvent: rec.on, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The secret reached the host through the 0600 file...
	if got, _ := os.ReadFile(filepath.Join(work, "node-a.secret")); string(got) != testSecret {
		t.Errorf("secret on the host %q, want the password", got)
	}
	// ...but not through argv...
	for _, a := range res.Command {
		if strings.Contains(a, testSecret) {
			t.Errorf("secret in argv %q", a)
		}
	}
	if !slices.Contains(res.Command, "--extra-vars=@"+b.Dir+"/"+SecretsFile) {
		t.Errorf("argv %q does not load the secrets file", res.Command)
	}
	// ...nor the environment ansible-playbook and its modules got.
	env, err := os.ReadFile(filepath.Join(work, "node-a.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{testSecret, "openstack-secret-value"} {
		if strings.Contains(string(env), bad) {
			t.Errorf("module environment contains %q", bad)
		}
	}
	if !strings.Contains(string(env), "ANSIBLE_CONFIG="+b.Dir+"/ansible.cfg") {
		t.Errorf("module environment lacks ANSIBLE_CONFIG:\n%s", env)
	}
	// A task that prints the secret is masked in events and the result.
	var leak string
	for _, e := range rec.events {
		if e.Task == "probe : Leak the secret into a message" && e.Kind == KindResult {
			leak = e.Msg
		}
	}
	if leak != "the password is "+redact.Masked {
		t.Errorf("leaking task message %q, want it masked", leak)
	}
	all := fmt.Sprintf("%+v %s %s", res.Events, res.Stdout, res.Stderr+stderr.String())
	if strings.Contains(all, testSecret) {
		t.Error("secret in the result or stderr")
	}
}

func TestLocalRunnerCancel(t *testing.T) {
	needAnsible(t)
	t.Parallel()
	work := t.TempDir()
	b, err := NewBundle(probeSpec(t, work, map[string]string{"node-a": "probe_sleep: 117"}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	opts := PlaybookOptions{OnEvent: func(e Event) {
		if e.Kind == KindTaskStart && e.Task == "probe : Take a while" {
			time.Sleep(500 * time.Millisecond) // let the sleep start
			cancelled = time.Now()
			cancel()
		}
	}}
	res, err := LocalRunner{}.Run(ctx, b, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if d := time.Since(cancelled); d > killGrace+5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if res == nil || res.RecapComplete || res.Recap["node-a"].OK == 0 {
		t.Errorf("want the partial recap counted from events, got %+v", res)
	}
	// No process of this run survives (the sleep runs in ansible's group).
	waitNoProcess(t, "sleep 117")
}

// waitNoProcess fails if a process whose command line contains pattern is
// still alive after a few seconds.
func waitNoProcess(t *testing.T, pattern string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := ""
		matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, m := range matches {
			b, err := os.ReadFile(m)
			if err != nil {
				continue
			}
			cmd := strings.ReplaceAll(string(b), "\x00", " ")
			if strings.Contains(cmd, pattern) && !strings.Contains(cmd, "go test") {
				stat, _ := os.ReadFile(filepath.Join(filepath.Dir(m), "stat"))
				if !strings.Contains(string(stat), ") Z ") {
					alive = filepath.Dir(m) + ": " + cmd
				}
			}
		}
		if alive == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process still running after cancel: %s", alive)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunWarnsNothing: a run with the bundle's ansible.cfg and environment
// draws no warning from Ansible, whichever ansible-core runs it (under
// ansible-core 2.19 a pinned allow_unsafe_lookups drew "[DEPRECATION
// WARNING]: DEFAULT_ALLOW_UNSAFE_LOOKUPS option" on every run).
func TestRunWarnsNothing(t *testing.T) {
	needAnsible(t)
	b, err := NewBundle(probeSpec(t, t.TempDir(), map[string]string{"node-a": ""}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := LocalRunner{}.Run(context.Background(), b, PlaybookOptions{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, w := range []string{"[WARNING]", "[DEPRECATION WARNING]"} {
		if strings.Contains(res.Stderr, w) {
			t.Errorf("Ansible warned:\n%s", res.Stderr)
			break
		}
	}
}
