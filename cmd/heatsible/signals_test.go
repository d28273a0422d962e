package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// These tests run the heatsible binary, built from this tree, and send it
// real signals at the stages where a process can be held from outside:
// Heat discovery (a fake Heat that never answers), the run (ansible-playbook
// connecting to a node that never answers; on the Ansible host, a stand-in
// ansible-playbook) and the cleanup of the Ansible host's staging
// directory (a stand-in rm that waits). internal/lcm's TestSignalAtEachStage
// covers every stage in-process.

var (
	buildOnce sync.Once
	binDir    string // removed by TestMain
	binPath   string
	buildErr  error
)

// binary builds heatsible once per test run; HEATSIBLE_TEST_BINARY names
// another binary to test instead (e.g. an older build, to see these tests
// fail on it).
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HEATSIBLE_TEST_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "heatsible-cli-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "heatsible")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a heatsible process in the background.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	code   int
	ended  time.Time
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// start runs the binary with only env (and PATH) in its environment.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startArgv(t, env, append([]string{binary(t)}, args...)...)
}

// startArgv is start for any command line.
func startArgv(t *testing.T, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.ended = time.Now()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode() // -1: killed by a signal
		default:
			p.code = -2
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) output() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String()
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the end (at most timeout) and returns the exit code.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		_, e := p.output()
		t.Fatalf("heatsible still runs after %s:\n%s", timeout, e)
	}
	return 0
}

// waitFor waits until ch says something happened, failing if the process
// ends first.
func (p *proc) waitFor(t *testing.T, what string, ch <-chan struct{}, timeout time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-p.done:
		_, e := p.output()
		t.Fatalf("heatsible ended (exit %d) before %s:\n%s", p.code, what, e)
	case <-time.After(timeout):
		_, e := p.output()
		t.Fatalf("no %s within %s:\n%s", what, timeout, e)
	}
}

// lastJSON returns the last JSON object on s (the error document of
// stderr).
func lastJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	for i := strings.LastIndex(s, "\n{"); ; i = strings.LastIndex(s[:i], "\n{") {
		var doc map[string]any
		if err := json.NewDecoder(strings.NewReader(s[i+1:])).Decode(&doc); err == nil {
			return doc
		}
		if i <= 0 {
			t.Fatalf("no JSON object in:\n%s", s)
		}
	}
}

var procSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[s]
}

// notify returns a channel that gets a value each time f is called
// (without blocking f).
func notify() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// silentHeat is Keystone and Heat: a token, then no answer to any Heat
// request. It returns the OS_* environment that points at it.
func silentHeat(t *testing.T, arrived func()) []string {
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
		arrived()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return []string{"OS_AUTH_URL=" + srv.URL + "/v3", "OS_USERNAME=admin", "OS_PASSWORD=s3cret", "OS_PROJECT_NAME=admin",
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=RegionOne"}
}

// runEnv is a state directory and a temporary directory (where local run
// bundles go) of the test's own, with a known_hosts file.
type runEnv struct {
	state, tmp, knownHosts string
}

func newRunEnv(t *testing.T) runEnv {
	t.Helper()
	e := runEnv{state: t.TempDir(), tmp: t.TempDir(), knownHosts: filepath.Join(t.TempDir(), "known_hosts")}
	if err := os.WriteFile(e.knownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e runEnv) env(extra ...string) []string {
	return append([]string{"HOME=" + e.state, "HEATSIBLE_STATE_DIR=" + e.state, "TMPDIR=" + e.tmp}, extra...)
}

// bundles lists the run bundles left in the temporary directory.
func (e runEnv) bundles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(e.tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range entries {
		if strings.HasPrefix(d.Name(), "heatsible-") {
			out = append(out, filepath.Join(e.tmp, d.Name()))
		}
	}
	return out
}

// TestSignalDuringHeatDiscovery: SIGINT, SIGTERM and SIGHUP while Heat is
// being read (by run, or by topology) exit 130, not 5 (the Heat error the
// cancellation causes), and the error document says which signal.
func TestSignalDuringHeatDiscovery(t *testing.T) {
	for _, sig := range procSignals {
		for _, command := range []string{"run", "topology"} {
			t.Run(sigName(sig)+"/"+command, func(t *testing.T) {
				if signal.Ignored(sig) {
					t.Skipf("%s is ignored where this test runs (nohup, or a background job's SIGINT): heatsible keeps a signal it was started with ignored, so its handling cannot be tested here", sigName(sig))
				}
				signalDuringHeat(t, sig, command)
			})
		}
	}
}

func signalDuringHeat(t *testing.T, sig syscall.Signal, command string) {
	e := newRunEnv(t)
	arrived, hit := notify()
	args := []string{"-o", "json", "run", "instantiate-end", "--local",
		"--request", filepath.Join(td, "requests", "valid.json"), "--package", filepath.Join(td, "package"),
		"--stack", "k8s-a-stack", "--known-hosts", e.knownHosts}
	if command == "topology" {
		args = []string{"-o", "json", "topology", "--request", filepath.Join(td, "requests", "valid.json"), "--stack", "k8s-a-stack"}
	}
	p := start(t, e.env(silentHeat(t, hit)...), args...)
	p.waitFor(t, "request to Heat", arrived, time.Minute)
	p.signal(t, sig)
	code := p.wait(t, 30*time.Second)
	_, errs := p.output()
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, errs)
	}
	doc := lastJSON(t, errs)
	msg, _ := doc["error"].(string)
	if doc["exit_code"] != 130.0 || !strings.HasPrefix(msg, "interrupted by "+sigName(sig)+": ") || !strings.Contains(msg, "k8s-a-stack") {
		t.Errorf("error document %v", doc)
	}
	if !strings.Contains(errs, "heatsible: "+sigName(sig)+": stopping:") {
		t.Errorf("stderr does not say it is stopping:\n%s", errs)
	}
}

// silentNode listens on port 22 of a loopback address of its own and
// never answers: ansible's ssh to it waits (ConnectTimeout). Port 22
// because inventories have no port; so root only.
func silentNode(t *testing.T, arrived func()) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("listening on port 22 needs root")
	}
	var l net.Listener
	var err error
	for range 20 {
		ip := fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(250), 1+rand.IntN(250))
		if l, err = net.Listen("tcp", ip+":22"); err == nil {
			break
		}
	}
	if err != nil {
		t.Skipf("no loopback address with a free port 22: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			arrived()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return strings.TrimSuffix(l.Addr().String(), ":22")
}

// topologyAt writes a topology of cluster whose every node is at addr.
func topologyAt(t *testing.T, cluster, addr string) string {
	t.Helper()
	doc := fmt.Sprintf(`cluster: %[1]s
stack: %[1]s-stack
nodes:
  - {name: master-0, role: master, ssh_address: %[2]s, address: %[2]s}
  - {name: worker-0, role: worker, ssh_address: %[2]s, address: %[2]s}
  - {name: storage-server, role: storage, ssh_address: %[2]s, address: %[2]s}
cps:
  storage_server_CP: %[2]s
  masterNode_CP1: %[2]s
volumes:
  - {resource: storage_server_volume, id: 5b1d3a2c-0000-4000-8000-000000000001, device: /dev/vdb}
`, cluster, addr)
	p := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ansibleOf lists the processes that run in dir (their command line names
// it): ansible-playbook and its workers run a bundle from its directory.
func ansibleOf(dir string) []string {
	var out []string
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(m), "stat"))
		if strings.Contains(cmd, dir) && !strings.Contains(string(stat), ") Z ") {
			out = append(out, filepath.Dir(m)+": "+cmd)
		}
	}
	return out
}

func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Error(msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// localRun starts instantiate-end with --local on a cluster whose nodes do
// not answer, and returns once ansible-playbook is connecting to one.
func localRun(t *testing.T, e runEnv, cluster string) *proc {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	arrived, hit := notify()
	topo := topologyAt(t, cluster, silentNode(t, hit))
	p := start(t, e.env(), "-o", "json", "run", "instantiate-end", "--local",
		"--request", filepath.Join(td, "requests", "valid.json"), "--package", filepath.Join(td, "package"),
		"--topology", topo, "--known-hosts", e.knownHosts)
	p.waitFor(t, "ssh connection from ansible-playbook", arrived, 2*time.Minute)
	return p
}

// TestSignalDuringLocalRun: SIGINT, SIGTERM and SIGHUP while
// ansible-playbook runs on this machine exit 130 (the run's document says
// so too), with ansible-playbook stopped, the bundle removed and the lock
// released (empty: not a killed run's).
func TestSignalDuringLocalRun(t *testing.T) {
	for _, sig := range procSignals {
		t.Run(sigName(sig), func(t *testing.T) {
			if signal.Ignored(sig) {
				t.Skipf("%s is ignored where this test runs (nohup, or a background job's SIGINT): heatsible keeps a signal it was started with ignored, so its handling cannot be tested here", sigName(sig))
			}
			e := newRunEnv(t)
			cluster := "sig-" + strings.ToLower(sigName(sig))
			p := localRun(t, e, cluster)
			bundles := e.bundles(t)
			if len(bundles) != 1 {
				t.Fatalf("bundles while running: %v", bundles)
			}
			p.signal(t, sig)
			code := p.wait(t, time.Minute)
			out, errs := p.output()
			if code != 130 {
				t.Fatalf("exit %d, want 130:\n%s", code, errs)
			}
			var doc struct {
				ExitCode int `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.ExitCode != 130 {
				t.Errorf("run document %q (%v): want exit_code 130", out, err)
			}
			if msg, _ := lastJSON(t, errs)["error"].(string); !strings.HasPrefix(msg, "interrupted by "+sigName(sig)) {
				t.Errorf("error %q", msg)
			}
			if left := e.bundles(t); len(left) > 0 {
				t.Errorf("bundles left: %v", left)
			}
			eventually(t, 10*time.Second, func() string {
				if left := ansibleOf(bundles[0]); len(left) > 0 {
					return fmt.Sprintf("processes of the run left: %v", left)
				}
				return ""
			})
			if b, err := os.ReadFile(filepath.Join(e.state, cluster+".lock")); err != nil || len(bytes.TrimSpace(b)) > 0 {
				t.Errorf("the lock file after the run: %q (%v), want empty (released)", b, err)
			}
		})
	}
}

// TestKilledRunIsSwept: a run killed with SIGKILL takes ansible-playbook
// with it (nothing goes on configuring the nodes) and leaves its bundle,
// secrets included, which the next run of the cluster removes, also when
// the lock the killed run left makes it refuse (exit 6).
func TestKilledRunIsSwept(t *testing.T) {
	e := newRunEnv(t)
	p := localRun(t, e, "sig-kill")
	bundles := e.bundles(t)
	if len(bundles) != 1 {
		t.Fatalf("bundles while running: %v", bundles)
	}
	if len(ansibleOf(bundles[0])) == 0 {
		t.Fatal("no ansible-playbook runs the bundle")
	}
	p.signal(t, syscall.SIGKILL)
	p.wait(t, 30*time.Second)
	if _, err := os.Stat(filepath.Join(bundles[0], "secrets.yml")); err != nil {
		t.Fatalf("the killed run's bundle: %v", err)
	}
	eventually(t, 15*time.Second, func() string {
		if left := ansibleOf(bundles[0]); len(left) > 0 {
			return fmt.Sprintf("processes of the killed run still run: %v", left)
		}
		return ""
	})

	topo := topologyAt(t, "sig-kill", "127.0.0.1")
	next := start(t, e.env(), "run", "instantiate-end", "--local",
		"--request", filepath.Join(td, "requests", "valid.json"), "--package", filepath.Join(td, "package"),
		"--topology", topo, "--known-hosts", e.knownHosts)
	code := next.wait(t, time.Minute)
	_, errs := next.output()
	if code != 6 || !strings.Contains(errs, "--break-lock") {
		t.Errorf("the run after the killed one: exit %d, want 6 (the stale lock):\n%s", code, errs)
	}
	if !strings.Contains(errs, "heatsible: removed 1 run bundle(s) that a killed run of sig-kill left on this machine: "+bundles[0]) {
		t.Errorf("the next run does not say it removed the bundle:\n%s", errs)
	}
	if left := e.bundles(t); len(left) > 0 {
		t.Errorf("bundles left: %v", left)
	}
}

// ansibleHost is the remotetest sshd as the Ansible host, with a user
// whose login shell puts stand-ins first on PATH: ansible-playbook waits
// until it is stopped, and rm, when told to, waits before removing a
// staging directory. The stand-ins say where they are by creating files
// in gate.
type ansibleHost struct {
	srv        *remotetest.Server
	user, pass string
	gate       string
}

const standInAnsible = `#!/bin/sh
# Stand-in ansible-playbook: a run that goes on until it is stopped.
touch "$GATE/run-reached"
trap 'exit 143' TERM INT HUP
while :; do sleep 0.2; done
`

const standInRm = `#!/bin/sh
# Stand-in rm: removing a staging directory waits while $GATE/hold-rm
# exists, until $GATE/release-rm does.
case "$*" in
*/.heatsible/runs/heatsible-*)
  if [ -e "$GATE/hold-rm" ]; then
    touch "$GATE/rm-reached"
    while [ -d "$GATE" ] && [ ! -e "$GATE/release-rm" ]; do sleep 0.2; done
  fi;;
esac
exec /bin/rm "$@"
`

func newAnsibleHost(t *testing.T) *ansibleHost {
	t.Helper()
	srv := remotetest.Start(t)
	pass := "host-pass-" + fmt.Sprint(rand.Uint32())
	user := srv.AddUser(t, pass)
	gate, err := os.MkdirTemp("", "heatsible-gate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(gate) })
	bin := filepath.Join(gate, "bin")
	flags := filepath.Join(gate, "flags")
	for _, d := range []string{bin, flags} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(gate, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(flags, 0o777); err != nil {
		t.Fatal(err)
	}
	shell := "#!/bin/sh\nPATH=" + bin + ":$PATH GATE=" + flags + "\nexport PATH GATE\nexec /bin/sh \"$@\"\n"
	// ansible-playbook starts with a clean environment (env -i: PATH, HOME,
	// the locale, TMPDIR), so the stand-in gets the gate's path written in,
	// not through GATE; rm runs in the login shell's environment.
	ansible := withFakeCore(t, "#!/bin/sh\nGATE="+flags+"\n"+strings.TrimPrefix(standInAnsible, "#!/bin/sh\n"), gate)
	for name, body := range map[string]string{"ansible-playbook": ansible, "rm": standInRm, "../shell": shell} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("usermod", "--shell", filepath.Join(gate, "shell"), user).CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v: %s", err, out)
	}
	return &ansibleHost{srv: srv, user: user, pass: pass, gate: flags}
}

func (h *ansibleHost) flag(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.gate, name), nil, 0o666); err != nil {
		t.Fatal(err)
	}
}

// waitFlag returns a channel closed when the stand-ins create name.
func (h *ansibleHost) waitFlag(name string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(h.gate, name)); err == nil {
				close(ch)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return ch
}

// staging lists the staging directories on the Ansible host.
func (h *ansibleHost) staging(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join("/home", h.user, ".heatsible", "runs", "heatsible-*"))
	return m
}

// TestSecondSignalDuringRemoteCleanup: the first SIGINT stops
// ansible-playbook on the Ansible host; while the staging directory is
// being removed there, a second SIGINT exits at once with 130 and says what
// is left behind and where: the staging directory on the Ansible host (and
// what removes it), the lock; the local bundle is removed on the spot.
func TestSecondSignalDuringRemoteCleanup(t *testing.T) {
	remotetest.Skip(t)
	h := newAnsibleHost(t)
	e := newRunEnv(t)
	known, err := os.ReadFile(h.srv.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.knownHosts, known, 0o600); err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	data, err := os.ReadFile(filepath.Join(td, "requests", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	k["ansible"] = map[string]any{"ip_address": "127.0.0.1", "username": h.user, "password": h.pass}
	reqFile := filepath.Join(t.TempDir(), "request.json")
	data, _ = json.Marshal(req)
	if err := os.WriteFile(reqFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	p := start(t, e.env(), "run", "instantiate-end", "--ansible-host", h.srv.Addr,
		"--request", reqFile, "--package", filepath.Join(td, "package"),
		"--topology", topologyAt(t, "sig-remote", "127.0.0.1"), "--known-hosts", e.knownHosts)
	p.waitFor(t, "ansible-playbook on the Ansible host", h.waitFlag("run-reached"), 2*time.Minute)
	stages := h.staging(t)
	if len(stages) != 1 {
		t.Fatalf("staging directories on the Ansible host: %v", stages)
	}
	bundles := e.bundles(t)
	h.flag(t, "hold-rm")
	p.signal(t, syscall.SIGINT)
	p.waitFor(t, "the removal of the staging directory", h.waitFlag("rm-reached"), time.Minute)
	p.signal(t, syscall.SIGINT)
	sent := time.Now()
	code := p.wait(t, 30*time.Second)
	_, errs := p.output()
	t.Logf("exited %s after the second SIGINT:\n%s", p.ended.Sub(sent).Round(time.Millisecond), errs)
	if code != 130 {
		t.Fatalf("exit %d, want 130", code)
	}
	if d := p.ended.Sub(sent); d > 3*time.Second {
		t.Errorf("exited %s after the second signal, want at once", d)
	}
	wants := []string{
		"heatsible: SIGINT: stopping:",
		"heatsible: second SIGINT: exited at once, without finishing the cleanup (exit 130):",
		"  left behind: the staging directory " + stages[0] + " on the Ansible host " + h.srv.Addr + ", with the run's secrets (secrets.yml, mode 0600): " +
			"if ansible-playbook still runs there, the Ansible host removes it when it sees the connection gone; else the next run of cluster sig-remote does",
		"  removed: the local run bundle " + bundles[0],
		"  left behind: the cluster lock " + filepath.Join(e.state, "sig-remote.lock") + ", naming this run: the next operation on cluster sig-remote is refused until it is re-run with --break-lock",
		"  run record: " + filepath.Join(e.state, "runs", "sig-remote") + "/",
	}
	for _, w := range wants {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	if left := e.bundles(t); len(left) > 0 {
		t.Errorf("local bundles left: %v", left)
	}
	if _, err := os.Stat(stages[0]); err != nil {
		t.Errorf("the staging directory said to be left behind: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.state, "sig-remote.lock")); !bytes.Contains(b, []byte(`"operation":"instantiate-end"`)) {
		t.Errorf("the lock does not name the run: %q", b)
	}
	// The held rm goes on: the staging directory goes after all.
	h.flag(t, "release-rm")
	eventually(t, 10*time.Second, func() string {
		if left := h.staging(t); len(left) > 0 {
			return fmt.Sprintf("the released rm did not remove %v", left)
		}
		return ""
	})
}

// TestIgnoredSIGHUPStaysIgnored: started with SIGHUP ignored (nohup),
// heatsible leaves it ignored (signal.Notify would enable it); SIGTERM still
// stops it, with 130.
func TestIgnoredSIGHUPStaysIgnored(t *testing.T) {
	e := newRunEnv(t)
	arrived, hit := notify()
	// The shell ignores SIGHUP, then execs heatsible in its place (same pid).
	p := startArgv(t, e.env(silentHeat(t, hit)...), "/bin/sh", "-c", `trap '' HUP; exec "$0" "$@"`, binary(t),
		"topology", "--request", filepath.Join(td, "requests", "valid.json"), "--stack", "k8s-a-stack")
	p.waitFor(t, "request to Heat", arrived, time.Minute)
	p.signal(t, syscall.SIGHUP)
	select {
	case <-p.done:
		_, errs := p.output()
		t.Fatalf("SIGHUP ended heatsible although it was started with SIGHUP ignored: exit %d\n%s", p.code, errs)
	case <-time.After(time.Second):
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 130 {
		_, errs := p.output()
		t.Errorf("SIGTERM: exit %d, want 130\n%s", code, errs)
	}
}
