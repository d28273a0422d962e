package lcm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/state"
)

// These tests send real signals (SIGINT, SIGTERM, SIGHUP) to the test
// process while a run is held in one of its stages, with the signal
// handler heatsible's main uses (package interrupt). Heat is a fake HTTP
// server, the Ansible host a TCP listener that never answers, and the
// Ansible runner and file operations fakes that answer as RemoteRunner
// does when its context is cancelled (the same error chains), so each
// stage's own error path is exercised.

// syncBuffer is a bytes.Buffer safe for the signal handler's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeHost is the fake Ansible host: ansible.Runner and ansible.FileOps,
// holding the stage under test until the signal has cancelled the run.
type fakeHost struct {
	stage string
	// hit sends the signal (once per call).
	hit func()
	// second, if set, is called in the cleanup stage after the first
	// signal has cancelled the run (the second-signal test).
	second func()

	mu      sync.Mutex
	runs    int
	staging []string
}

const fakeAddr = "192.0.2.5:22"

func (f *fakeHost) Where() string { return "the Ansible host " + fakeAddr }

func (f *fakeHost) PutFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (f *fakeHost) RemoveFile(context.Context, string, bool) error             { return nil }

// Stat answers like RemoteRunner.Stat: the kubespray root is a directory,
// its playbooks are files; when cancelled, the error remote.Client.Output
// gives.
func (f *fakeHost) Stat(ctx context.Context, p string) (bool, bool, error) {
	if f.stage == "preflight" {
		f.hit()
		<-ctx.Done()
		return false, false, fmt.Errorf("looking at %s on %s: %w", p, fakeAddr,
			fmt.Errorf("remote command on %s cancelled: %w", fakeAddr, ctx.Err()))
	}
	return true, !strings.HasSuffix(p, ".yml"), nil
}

func okResult() *ansible.Result {
	return &ansible.Result{ExitCode: 0, RecapComplete: true, Recap: map[string]ansible.HostRecap{"master-0": {OK: 3, Changed: 1}},
		Events: []ansible.Event{{Kind: ansible.KindResult, Task: "kubespray : Do a thing", Host: "master-0", Status: ansible.StatusChanged}}}
}

// Run answers like RemoteRunner.Run at each stage.
func (f *fakeHost) Run(ctx context.Context, b *ansible.Bundle, _ ansible.PlaybookOptions) (*ansible.Result, error) {
	f.mu.Lock()
	f.runs++
	stage := fmt.Sprintf("/home/ansible/.heatsible/runs/%s%d", ansible.StagingPrefix(b.Spec().Cluster, b.Spec().Operation), f.runs)
	f.staging = append(f.staging, stage)
	f.mu.Unlock()
	staged := interrupt.Track(ctx, interrupt.Leftover{What: "left behind: the staging directory " + stage + " on the Ansible host " + fakeAddr})
	defer staged()
	switch f.stage {
	case "upload":
		f.hit()
		<-ctx.Done()
		return nil, fmt.Errorf("uploading the ansible bundle to %s: %w", fakeAddr,
			fmt.Errorf("uploading to %s:%s cancelled: %w", fakeAddr, stage, ctx.Err()))
	case "run":
		f.hit()
		<-ctx.Done()
		return &ansible.Result{ExitCode: -1, Recap: map[string]ansible.HostRecap{}}, fmt.Errorf("running ansible-playbook on %s: %w", fakeAddr,
			fmt.Errorf("remote command on %s cancelled: %w", fakeAddr, ctx.Err()))
	case "run, a task failed":
		// ansible-playbook ended on the SIGTERM heatsible sent it, with
		// the task it was in reported failed (exit 2).
		f.hit()
		<-ctx.Done()
		res := &ansible.Result{ExitCode: 2, RecapComplete: true, Recap: map[string]ansible.HostRecap{"master-0": {OK: 2, Failed: 1}},
			Events: []ansible.Event{{Kind: ansible.KindResult, Task: "kubespray : Wait for etcd", Host: "master-0", Status: ansible.StatusFailed, Msg: "non-zero return code (-15)"}}}
		return res, res.Err()
	case "run, a host unreachable":
		f.hit()
		<-ctx.Done()
		res := &ansible.Result{ExitCode: 4, RecapComplete: true, Recap: map[string]ansible.HostRecap{"worker-0": {Unreachable: 1}},
			Events: []ansible.Event{{Kind: ansible.KindResult, Task: "Gathering Facts", Host: "worker-0", Status: ansible.StatusUnreachable, Msg: "Failed to connect to the host via ssh: Killed by signal 15."}}}
		return res, res.Err()
	case "run, completed anyway":
		// The signal came; ansible-playbook finished before it was
		// stopped.
		f.hit()
		<-ctx.Done()
		return okResult(), nil
	case "panic":
		panic("a bug in the runner")
	case "cleanup":
		// The playbook ran; the signal comes while the staging directory
		// is being removed, which goes on (on a fresh context, as in
		// RemoteRunner).
		f.hit()
		<-ctx.Done()
		if f.second != nil {
			f.second()
		}
		return okResult(), nil
	}
	return okResult(), nil
}

// blockingHeat serves a Keystone token whose catalog points at itself, and
// holds every Heat request until the client goes away.
func blockingHeat(t *testing.T, arrived func()) {
	t.Helper()
	fakeHeat(t, func(_ http.ResponseWriter, r *http.Request) {
		arrived()
		<-r.Context().Done()
	})
}

// fakeHeat is Keystone (a password token whose catalog's orchestration
// endpoint is this same server) and, for every other request, heat. It
// points the OS_* environment at it.
func fakeHeat(t *testing.T, heat http.HandlerFunc) {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.URL.Path == "/v3/auth/tokens" {
			w.Header().Set("X-Subject-Token", "fixture-token")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token": {"expires_at": "2099-01-01T00:00:00.000000Z", "methods": ["password"],
 "user": {"id": "u1", "name": "admin", "domain": {"id": "default", "name": "Default"}},
 "project": {"id": "p1", "name": "admin", "domain": {"id": "default", "name": "Default"}},
 "catalog": [{"type": "orchestration", "name": "heat", "id": "h1", "endpoints": [
   {"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": %q}]}]}}`, srv.URL+"/v1/p1")
			return
		}
		heat(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for k, v := range map[string]string{"OS_AUTH_URL": srv.URL + "/v3", "OS_USERNAME": "admin", "OS_PASSWORD": "s3cret",
		"OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": "RegionOne"} {
		t.Setenv(k, v)
	}
}

// silentHost accepts TCP connections and never says a word: an SSH
// handshake with it waits until the client gives up.
func silentHost(t *testing.T, arrived func()) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			arrived()
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

var testSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// interruptRun is one run of TestSignalAtEachStage's kind: a state
// directory and a temporary directory (the local bundles) of its own, the
// signal handler, and the options with a fake host for stage.
type interruptRun struct {
	o      RunOptions
	stderr *syncBuffer
	tmp    string
	host   *fakeHost
	h      *interrupt.Handler
	ctx    context.Context
	exits  chan int
}

func newInterruptRun(t *testing.T, stage string, sig syscall.Signal) *interruptRun {
	t.Helper()
	t.Setenv("HEATSIBLE_STATE_DIR", t.TempDir())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &interruptRun{stderr: &syncBuffer{}, tmp: tmp, exits: make(chan int, 1)}
	var once sync.Once
	hit := func() {
		once.Do(func() {
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Errorf("kill: %v", err)
			}
		})
	}
	r.host = &fakeHost{stage: stage, hit: hit}
	r.ctx, r.h = interrupt.Notify(context.Background(), interrupt.Config{Stderr: r.stderr, Exit: func(code int) { r.exits <- code }})
	t.Cleanup(r.h.Stop)
	req := loadRequest(t, "ansible_kubespray")
	r.o = RunOptions{
		Operation: OpInstantiateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: "../../testdata/topology/k8s-a.yaml"}, KnownHosts: kh, Version: "test",
		Local: true, newRunner: func() (ansible.Runner, ansible.FileOps) { return r.host, r.host },
		Stderr: r.stderr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	switch stage {
	case "heat discovery":
		blockingHeat(t, hit)
		r.o.Source = Source{Stack: "k8s-a-stack"}
	case "ssh connect":
		r.o.Local, r.o.AnsibleHost = false, silentHost(t, hit)
	}
	return r
}

// bundles lists the local bundles left in the run's temporary directory.
func (r *interruptRun) bundles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(r.tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "heatsible-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestSignalAtEachStage: SIGINT, SIGTERM or SIGHUP at any stage of a run
// ends it with exit code 130 and "interrupted by SIG...", never the code of
// the error the cancellation caused on its way (5 for Heat, 3 for SSH and
// the preflight, 4 for a task that failed as Ansible was stopped, 0 for a
// run that completed anyway); the local bundle is removed, the lock is
// free (not left as a killed run's), and the run record says 130.
func TestSignalAtEachStage(t *testing.T) {
	stages := []struct {
		stage string
		runs  int    // how many times the runner was called
		err   string // what the stage's own error says
	}{
		{"heat discovery", 0, "reading stack k8s-a-stack"},
		{"ssh connect", 0, "connecting to the Ansible host"},
		{"preflight", 0, "looking at /home/ansible/kubespray on 192.0.2.5:22"},
		{"upload", 1, "uploading the ansible bundle to 192.0.2.5:22"},
		{"run", 1, "running ansible-playbook on 192.0.2.5:22"},
		{"run, a task failed", 1, "kubespray : Wait for etcd"},
		{"run, a host unreachable", 1, "worker-0"},
		{"run, completed anyway", 1, ""},
		{"cleanup", 1, ""},
	}
	for _, sig := range testSignals {
		for _, st := range stages {
			t.Run(interrupt.Name(sig)+"/"+st.stage, func(t *testing.T) {
				if signal.Ignored(sig) {
					t.Skipf("%s is ignored where this test runs (nohup, or a background job's SIGINT): heatsible keeps a signal it was started with ignored, so its handling cannot be tested here", interrupt.Name(sig))
				}
				r := newInterruptRun(t, st.stage, sig)
				ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
				defer cancel()
				_, err := Run(ctx, r.o)
				if code := fail.Code(err); code != fail.Interrupted {
					t.Fatalf("Run: exit %d (%v), want %d", code, err, fail.Interrupted)
				}
				name := interrupt.Name(sig)
				if !strings.HasPrefix(err.Error(), "interrupted by "+name) || !strings.Contains(err.Error(), st.err) {
					t.Errorf("error %q: want it to start with %q and say %q", err, "interrupted by "+name, st.err)
				}
				if !strings.Contains(r.stderr.String(), "heatsible: "+name+": stopping:") {
					t.Errorf("stderr does not say the run is stopping:\n%s", r.stderr)
				}
				if r.host.runs != st.runs {
					t.Errorf("the runner ran %d times, want %d (nothing starts after the signal)", r.host.runs, st.runs)
				}
				if left := r.bundles(t); len(left) > 0 {
					t.Errorf("local bundles left: %v", left)
				}
				if l, lerr := state.Acquire("k8s-a", "check", false); lerr != nil {
					t.Errorf("the lock after the interrupted run: %v", lerr)
				} else {
					l.Release()
				}
				if b, rerr := os.ReadFile(state.LogPath(err)); rerr != nil || !strings.Contains(string(b), `"exit_code":130`) {
					t.Errorf("run.log (%v) does not record exit code 130:\n%s", rerr, b)
				}
			})
		}
	}
}

// TestSecondSignalDuringCleanup: a second signal while the run cleans up
// exits at once with 130: the local bundle is removed on the spot (it is
// local and holds the run's secrets); the staging directory on the Ansible
// host, the lock and the run record are named, with what removes them.
func TestSecondSignalDuringCleanup(t *testing.T) {
	for _, sig := range testSignals {
		t.Run(interrupt.Name(sig), func(t *testing.T) {
			if signal.Ignored(sig) {
				t.Skipf("%s is ignored where this test runs (nohup, or a background job's SIGINT): heatsible keeps a signal it was started with ignored, so its handling cannot be tested here", interrupt.Name(sig))
			}
			r := newInterruptRun(t, "cleanup", sig)
			var bundleAtExit []string
			r.host.second = func() {
				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Errorf("kill: %v", err)
				}
				select {
				case code := <-r.exits:
					if code != fail.Interrupted {
						t.Errorf("exit(%d), want %d", code, fail.Interrupted)
					}
				case <-time.After(10 * time.Second):
					t.Error("no exit within 10 s of the second signal")
				}
				bundleAtExit = r.bundles(t)
			}
			ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
			defer cancel()
			_, _ = Run(ctx, r.o)
			if len(bundleAtExit) > 0 {
				t.Errorf("the exit at once left the local bundle: %v", bundleAtExit)
			}
			got := r.stderr.String()
			name := interrupt.Name(sig)
			wants := []string{
				"heatsible: second " + name + ": exited at once, without finishing the cleanup (exit 130):",
				"  left behind: the staging directory " + r.host.staging[0] + " on the Ansible host " + fakeAddr,
				"  removed: the local run bundle " + filepath.Join(r.tmp, ansible.StagingPrefix("k8s-a", OpInstantiateEnd)),
				"  left behind: the cluster lock " + filepath.Join(os.Getenv("HEATSIBLE_STATE_DIR"), "k8s-a.lock") + ", naming this run",
				"--break-lock",
				"  run record: " + filepath.Join(os.Getenv("HEATSIBLE_STATE_DIR"), state.RunsDir, "k8s-a") + "/",
			}
			for _, w := range wants {
				if !strings.Contains(got, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got)
				}
			}
			// Innermost first, as the cleanup would have gone.
			if i, j := strings.Index(got, "staging directory"), strings.Index(got, "cluster lock"); i < 0 || j < i {
				t.Errorf("want the staging directory before the lock:\n%s", got)
			}
		})
	}
}

// TestPanicCleansUp: a panic during the run (a bug) still removes the local
// bundle and releases the lock, and is exit code 1 (not Go's 2, "invalid
// input"), with the panic in the run record.
func TestPanicCleansUp(t *testing.T) {
	r := newInterruptRun(t, "panic", syscall.SIGINT)
	_, err := Run(r.ctx, r.o)
	if code := fail.Code(err); code != fail.Internal || !strings.Contains(err.Error(), "panic: a bug in the runner") {
		t.Fatalf("Run: exit %d (%v), want 1 naming the panic", code, err)
	}
	if left := r.bundles(t); len(left) > 0 {
		t.Errorf("local bundles left: %v", left)
	}
	if l, lerr := state.Acquire("k8s-a", "check", false); lerr != nil {
		t.Errorf("the lock after the panic: %v", lerr)
	} else {
		l.Release()
	}
	if b, rerr := os.ReadFile(state.LogPath(err)); rerr != nil || !strings.Contains(string(b), "a bug in the runner") {
		t.Errorf("run.log (%v) does not record the panic:\n%s", rerr, b)
	}
}
