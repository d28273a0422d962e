package externallb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const script = "haproxy-lb.sh"

func needHaproxy(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not on PATH: install Debian's haproxy package (scripts/deps.sh does) to test haproxy-lb.sh")
	}
}

// lb is one load balancer's files: a configuration file and a state
// directory in a temporary directory, and the environment that points the
// script at them (no service is touched).
type lb struct {
	dir, conf, state string
	env              []string
}

func newLB(t *testing.T, extra ...string) *lb {
	t.Helper()
	dir := t.TempDir()
	l := &lb{dir: dir, conf: filepath.Join(dir, "etc", "haproxy.cfg"), state: filepath.Join(dir, "state")}
	l.env = append(os.Environ(),
		"HAPROXY_LB_CONF="+l.conf,
		"HAPROXY_LB_STATE="+l.state,
		"HAPROXY_LB_NO_SERVICE=1",
		"HAPROXY_LB_PORTS=18080:30080",
		"HAPROXY_LB_LOCK_TIMEOUT=30",
	)
	l.env = append(l.env, extra...)
	return l
}

type result struct {
	code           int
	stdout, stderr string
}

// last is the last line of stdout: "changed" or "unchanged" for a mutating
// command that keeps the interface.
func (r result) last() string {
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	return lines[len(lines)-1]
}

func (l *lb) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./"+script, args...)
	cmd.Env = l.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", script, args, err)
	}
	return r
}

// routes is list-routes' answer.
func (l *lb) routes(t *testing.T) []string {
	t.Helper()
	r := l.run(t, "list-routes")
	if r.code != 0 {
		t.Fatalf("list-routes: exit %d: %s", r.code, r.stderr)
	}
	return strings.Fields(strings.ReplaceAll(r.stdout, " ", "="))
}

// snapshot is every file under the load balancer's directory with its
// content (the lock file's presence included): what "nothing changed" is
// compared against.
func (l *lb) snapshot(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(l.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(l.dir, p)
		if d.IsDir() {
			files[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func haproxyCheck(t *testing.T, conf string) {
	t.Helper()
	out, err := exec.Command("haproxy", "-c", "-f", conf).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", conf, err, out)
	}
}

func TestShellcheck(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not on PATH (scripts/deps.sh installs it)")
	}
	// The sample, and heatsible's test script of Tacker's contract.
	for _, f := range []string{script, tackerScript} {
		if out, err := exec.Command("shellcheck", "-x", f).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", f, err, out)
		}
	}
}

// TestCommands drives one load balancer through a sequence of commands and
// checks each one's exit status, last output line, the routes afterwards,
// and that the commands that must change nothing changed no file.
func TestCommands(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	l := newLB(t)
	long := strings.Repeat("a", 64)
	steps := []struct {
		name   string
		args   []string
		code   int
		last   string   // "" when the exit is not 0
		routes []string // after the command; nil: not checked
		same   bool     // no file may change
		stderr string   // substring of stderr
	}{
		{name: "dry-run install on a fresh VM creates nothing", args: []string{"--check", "install"}, last: "changed", same: true},
		{name: "route before install fails", args: []string{"add-route", "worker-1", "10.0.0.5"}, code: 1, same: true, stderr: "run 'haproxy-lb.sh install' first"},
		{name: "install", args: []string{"install"}, last: "changed", routes: []string{}},
		{name: "install again", args: []string{"install"}, last: "unchanged", same: true},
		{name: "add", args: []string{"add-route", "worker-1", "10.0.0.5"}, last: "changed", routes: []string{"worker-1=10.0.0.5"}},
		{name: "add again", args: []string{"add-route", "worker-1", "10.0.0.5"}, last: "unchanged", routes: []string{"worker-1=10.0.0.5"}, same: true},
		{name: "add IPv6, stored lower case", args: []string{"add-route", "worker-2", "FD00::2"}, last: "changed", routes: []string{"worker-1=10.0.0.5", "worker-2=fd00::2"}},
		{name: "add IPv6 again in another case", args: []string{"add-route", "worker-2", "fd00::2"}, last: "unchanged", routes: []string{"worker-1=10.0.0.5", "worker-2=fd00::2"}, same: true},
		{name: "dry-run add", args: []string{"--check", "add-route", "worker-3", "10.0.0.7"}, last: "changed", routes: []string{"worker-1=10.0.0.5", "worker-2=fd00::2"}, same: true},
		{name: "dry-run add, --check after the command", args: []string{"add-route", "worker-3", "10.0.0.7", "--check"}, last: "changed", routes: []string{"worker-1=10.0.0.5", "worker-2=fd00::2"}, same: true},
		{name: "dry-run add of a route in place", args: []string{"--check", "add-route", "worker-1", "10.0.0.5"}, last: "unchanged", routes: []string{"worker-1=10.0.0.5", "worker-2=fd00::2"}, same: true},
		{name: "new address for a node", args: []string{"add-route", "worker-1", "10.0.0.6"}, last: "changed", routes: []string{"worker-1=10.0.0.6", "worker-2=fd00::2"}},
		{name: "upper-case name", args: []string{"add-route", "Worker-1", "10.0.0.5"}, code: 2, routes: []string{"worker-1=10.0.0.6", "worker-2=fd00::2"}, same: true, stderr: "NAME"},
		{name: "name with underscore", args: []string{"add-route", "worker_1", "10.0.0.5"}, code: 2, same: true, stderr: "NAME"},
		{name: "name ending in a dash", args: []string{"add-route", "worker-", "10.0.0.5"}, code: 2, same: true, stderr: "NAME"},
		{name: "name of 64 characters", args: []string{"add-route", long, "10.0.0.5"}, code: 2, same: true, stderr: "NAME"},
		{name: "name with a slash", args: []string{"remove-route", "../settings"}, code: 2, same: true, stderr: "NAME"},
		{name: "empty name", args: []string{"add-route", "", "10.0.0.5"}, code: 2, same: true, stderr: "NAME"},
		{name: "octet above 255", args: []string{"add-route", "worker-3", "10.0.0.256"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "three octets", args: []string{"add-route", "worker-3", "10.0.0"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "leading zero", args: []string{"add-route", "worker-3", "010.0.0.1"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "two ::", args: []string{"add-route", "worker-3", "1::2::3"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "nine IPv6 groups", args: []string{"add-route", "worker-3", "1:2:3:4:5:6:7:8:9"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "IPv6 zone", args: []string{"add-route", "worker-3", "fe80::1%eth0"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "host name", args: []string{"add-route", "worker-3", "worker-3.example"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "address with a port", args: []string{"add-route", "worker-3", "10.0.0.7:80"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "config injection", args: []string{"add-route", "worker-3", "10.0.0.7\n    server x 1.2.3.4"}, code: 2, same: true, stderr: "ADDRESS"},
		{name: "no command", args: nil, code: 2, same: true, stderr: "usage"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, same: true, stderr: "unknown command"},
		{name: "unknown option", args: []string{"--force", "install"}, code: 2, same: true, stderr: "unknown option"},
		{name: "missing ADDRESS", args: []string{"add-route", "worker-3"}, code: 2, same: true, stderr: "usage"},
		{name: "extra argument", args: []string{"remove-route", "worker-1", "x"}, code: 2, same: true, stderr: "usage"},
		{name: "dry-run remove", args: []string{"--check", "remove-route", "worker-2"}, last: "changed", routes: []string{"worker-1=10.0.0.6", "worker-2=fd00::2"}, same: true},
		{name: "remove", args: []string{"remove-route", "worker-1"}, last: "changed", routes: []string{"worker-2=fd00::2"}},
		{name: "remove again", args: []string{"remove-route", "worker-1"}, last: "unchanged", routes: []string{"worker-2=fd00::2"}, same: true},
		{name: "dry-run remove of an absent route", args: []string{"--check", "remove-route", "worker-1"}, last: "unchanged", routes: []string{"worker-2=fd00::2"}, same: true},
		{name: "install keeps the routes", args: []string{"install"}, last: "unchanged", routes: []string{"worker-2=fd00::2"}, same: true},
	}
	for i, s := range steps {
		before := l.snapshot(t)
		r := l.run(t, s.args...)
		where := fmt.Sprintf("step %d %q (%v)", i, s.name, s.args)
		if r.code != s.code {
			t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", where, r.code, s.code, r.stdout, r.stderr)
		}
		if s.code == 0 && r.last() != s.last {
			t.Errorf("%s: last line %q, want %q\nstdout: %s", where, r.last(), s.last, r.stdout)
		}
		if s.code != 0 && !strings.Contains(r.stderr, s.stderr) {
			t.Errorf("%s: stderr %q does not say %q", where, r.stderr, s.stderr)
		}
		if after := l.snapshot(t); s.same && !mapsEqual(before, after) {
			t.Errorf("%s changed files:\nbefore %q\nafter  %q", where, before, after)
		}
		if _, err := os.Stat(l.conf); err == nil {
			haproxyCheck(t, l.conf)
		}
		if s.routes != nil {
			if got := l.routes(t); !slices.Equal(got, s.routes) {
				t.Errorf("%s: routes %v, want %v", where, got, s.routes)
			}
		}
	}
	conf, err := os.ReadFile(l.conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind *:18080", "server worker-2 [fd00::2]:30080 check"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(string(conf), "worker-1") {
		t.Errorf("config still routes worker-1:\n%s", conf)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAddressesAccepted: valid addresses pass validation (a dry run, so
// nothing is written).
func TestAddressesAccepted(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	l := newLB(t)
	for _, addr := range []string{"0.0.0.0", "255.255.255.255", "10.10.0.21", "::1", "::", "fe80::", "1:2:3:4:5:6:7:8",
		"1::8", "2001:db8::ff00:42:8329", "::ffff:10.0.0.1", "64:ff9b::192.0.2.33"} {
		r := l.run(t, "--check", "add-route", "node-a", addr)
		if r.code != 0 || r.last() != "changed" {
			t.Errorf("add-route node-a %s: exit %d, last %q, stderr %s", addr, r.code, r.last(), r.stderr)
		}
	}
}

// TestConfigDriftAndOriginal: a configuration that install did not write is
// kept once as .heatsible-orig; an edit of the managed file is undone by the
// next command, which reports it as a change.
func TestConfigDriftAndOriginal(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	l := newLB(t)
	orig := "# the distribution's haproxy.cfg\nglobal\n"
	if err := os.MkdirAll(filepath.Dir(l.conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.conf, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := l.run(t, "install"); r.code != 0 || r.last() != "changed" {
		t.Fatalf("install: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(l.conf + ".heatsible-orig"); err != nil || string(b) != orig {
		t.Fatalf("original not kept: %q, %v", b, err)
	}
	if r := l.run(t, "add-route", "worker-1", "10.0.0.5"); r.last() != "changed" {
		t.Fatalf("add-route: %q %s", r.stdout, r.stderr)
	}
	managed, _ := os.ReadFile(l.conf)
	if err := os.WriteFile(l.conf, append(managed, "    server rogue 10.9.9.9:30080\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add-route", "worker-1", "10.0.0.5"}, {"install"}} {
		if err := os.WriteFile(l.conf, append(managed, "    server rogue 10.9.9.9:30080\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := l.run(t, args...); r.code != 0 || r.last() != "changed" {
			t.Errorf("%v after a manual edit: exit %d, last %q (want changed)", args, r.code, r.last())
		}
		if b, _ := os.ReadFile(l.conf); !bytes.Equal(b, managed) {
			t.Errorf("%v did not restore the managed configuration:\n%s", args, b)
		}
	}
	if r := l.run(t, "install"); r.last() != "unchanged" {
		t.Errorf("install after restore: %q", r.stdout)
	}
	if b, _ := os.ReadFile(l.conf + ".heatsible-orig"); string(b) != orig {
		t.Errorf("the original was overwritten: %q", b)
	}
}

// TestRefusedConfigLeavesLiveFile: a configuration haproxy -c refuses (a
// user that does not exist) never replaces the live file, and nothing of
// the failed command is recorded.
func TestRefusedConfigLeavesLiveFile(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	l := newLB(t)
	if r := l.run(t, "install"); r.last() != "changed" {
		t.Fatalf("install: %q %s", r.stdout, r.stderr)
	}
	if r := l.run(t, "add-route", "worker-1", "10.0.0.5"); r.last() != "changed" {
		t.Fatalf("add-route: %q %s", r.stdout, r.stderr)
	}
	before := l.snapshot(t)
	bad := &lb{dir: l.dir, conf: l.conf, state: l.state,
		env: append(slices.Clone(l.env), "HAPROXY_LB_USER=no-such-user-h2", "HAPROXY_LB_PORTS=18081:30081")}
	r := bad.run(t, "install")
	if r.code != 1 || !strings.Contains(r.stderr, "haproxy -c refused") {
		t.Fatalf("install with a bad user: exit %d, stderr %s", r.code, r.stderr)
	}
	if after := l.snapshot(t); !mapsEqual(before, after) {
		t.Errorf("a refused install changed files:\nbefore %q\nafter  %q", before, after)
	}
	haproxyCheck(t, l.conf)
	if r := l.run(t, "install"); r.last() != "unchanged" {
		t.Errorf("install with the recorded settings after the refusal: %q %s", r.stdout, r.stderr)
	}
}

// TestBadPorts: HAPROXY_LB_PORTS is checked (exit 2, nothing written).
func TestBadPorts(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	for _, ports := range []string{"", "80", "80:0", "0:80", "80:70000", "80:30080 80:30081", "80:30080;443:30443", "http:30080"} {
		l := newLB(t, "HAPROXY_LB_PORTS="+ports)
		if r := l.run(t, "install"); r.code != 2 || !strings.Contains(r.stderr, "HAPROXY_LB_PORTS") {
			t.Errorf("HAPROXY_LB_PORTS=%q: exit %d, stderr %s", ports, r.code, r.stderr)
		}
		if _, err := os.Stat(l.conf); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("HAPROXY_LB_PORTS=%q: config written (%v)", ports, err)
		}
	}
	l := newLB(t, "HAPROXY_LB_PORTS=80:30080,443:30443")
	if r := l.run(t, "install"); r.code != 0 {
		t.Fatalf("two ports: exit %d %s", r.code, r.stderr)
	}
	conf, _ := os.ReadFile(l.conf)
	for _, want := range []string{"bind *:80\n", "bind *:443\n", "backend heatsible_443_nodes"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %q", want)
		}
	}
}

// TestConcurrentRoutes: parallel add-route calls serialize on the lock;
// none is lost, in the state or in the configuration.
func TestConcurrentRoutes(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	l := newLB(t)
	if r := l.run(t, "install"); r.code != 0 {
		t.Fatalf("install: %s", r.stderr)
	}
	const n = 8
	var wg sync.WaitGroup
	res := make([]result, n)
	for i := range n {
		wg.Go(func() { res[i] = l.run(t, "add-route", fmt.Sprintf("worker-%d", i), fmt.Sprintf("10.0.1.%d", i+1)) })
	}
	wg.Wait()
	var want []string
	for i, r := range res {
		if r.code != 0 || r.last() != "changed" {
			t.Errorf("add-route worker-%d: exit %d, last %q, stderr %s", i, r.code, r.last(), r.stderr)
		}
		want = append(want, fmt.Sprintf("worker-%d=10.0.1.%d", i, i+1))
	}
	if got := l.routes(t); !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	conf, _ := os.ReadFile(l.conf)
	for i := range n {
		if line := fmt.Sprintf("server worker-%d 10.0.1.%d:30080 check", i, i+1); !strings.Contains(string(conf), line) {
			t.Errorf("config lacks %q", line)
		}
	}
	haproxyCheck(t, l.conf)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTrafficThroughHaproxy runs haproxy on loopback with the configuration
// the script wrote: a request to its frontend reaches a Go HTTP server
// routed as a node; after remove-route and a reload it no longer does;
// after add-route and a reload it does again.
func TestTrafficThroughHaproxy(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello from the node")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	nodePort := ln.Addr().(*net.TCPAddr).Port
	front := freePort(t)

	l := newLB(t, fmt.Sprintf("HAPROXY_LB_PORTS=%d:%d", front, nodePort), "HAPROXY_LB_BIND=127.0.0.1", "HAPROXY_LB_USER=")
	for _, args := range [][]string{{"install"}, {"add-route", "worker-1", "127.0.0.1"}} {
		if r := l.run(t, args...); r.code != 0 || r.last() != "changed" {
			t.Fatalf("%v: exit %d, %q %s", args, r.code, r.stdout, r.stderr)
		}
	}

	// Master-worker mode in the foreground; SIGUSR2 reloads the file, as
	// the Debian unit's `systemctl reload haproxy` does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hp := exec.CommandContext(ctx, "haproxy", "-W", "-db", "-f", l.conf)
	var hpOut bytes.Buffer
	hp.Stdout, hp.Stderr = &hpOut, &hpOut
	hp.Cancel = func() error { return hp.Process.Signal(syscall.SIGTERM) }
	hp.WaitDelay = 10 * time.Second
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = hp.Wait()
		t.Logf("haproxy output:\n%s", hpOut.String())
	}()

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := fmt.Sprintf("http://127.0.0.1:%d/", front)
	get := func() (string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// waitFor polls until ok(a request's outcome) holds, at most 15 s.
	waitFor := func(what string, ok func(string, error) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			body, err := get()
			if ok(body, err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last request: %q, %v", what, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	routed := func(body string, err error) bool { return err == nil && body == "hello from the node" }
	reload := func() {
		t.Helper()
		if err := hp.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
	}

	waitFor("request through haproxy to the routed node", routed)
	if hits.Load() == 0 {
		t.Fatal("the node saw no request")
	}

	if r := l.run(t, "remove-route", "worker-1"); r.last() != "changed" {
		t.Fatalf("remove-route: %q %s", r.stdout, r.stderr)
	}
	reload()
	waitFor("requests fail once the route is removed", func(_ string, err error) bool { return err != nil })
	seen := hits.Load()
	for range 5 {
		if body, err := get(); err == nil {
			t.Errorf("request answered without a route: %q", body)
		}
	}
	if got := hits.Load(); got != seen {
		t.Errorf("the node saw %d requests after its route was removed", got-seen)
	}

	if r := l.run(t, "add-route", "worker-1", "127.0.0.1"); r.last() != "changed" {
		t.Fatalf("add-route again: %q %s", r.stdout, r.stderr)
	}
	reload()
	waitFor("request through haproxy once the route is back", routed)
}

// fakeService is a stand-in for the `service` command (SysV init), used
// where no init system can run for a test: `start` and `reload` record the
// call and leave a background process behind, as an init script's daemon
// does, which inherits every descriptor not closed for it.
const fakeService = `#!/bin/sh
case $2 in
status) test -f "$FAKE_DIR/running" ;;
start|reload)
  touch "$FAKE_DIR/running"
  echo "$2" >>"$FAKE_DIR/calls"
  sleep 120 &
  echo $! >>"$FAKE_DIR/pids" ;;
*) exit 3 ;;
esac
`

// TestServiceStartAndReload: install starts the service once, a route
// change reloads it, a command that changes nothing does not; and the
// daemon that start left behind does not hold the script's lock (the next
// command would time out waiting for it).
func TestServiceStartAndReload(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: the script would call the real systemctl; the SysV path is tested where systemd does not run")
	}
	fake := t.TempDir()
	bin := filepath.Join(fake, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "service"), []byte(fakeService), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(fake, "pids"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	})
	l := newLB(t, "FAKE_DIR="+fake, "PATH="+bin+":"+os.Getenv("PATH"), "HAPROXY_LB_LOCK_TIMEOUT=3")
	l.env = slices.DeleteFunc(l.env, func(e string) bool { return e == "HAPROXY_LB_NO_SERVICE=1" })
	calls := func() []string {
		b, _ := os.ReadFile(filepath.Join(fake, "calls"))
		return strings.Fields(string(b))
	}
	steps := []struct {
		args  []string
		last  string
		calls []string
	}{
		{[]string{"install"}, "changed", []string{"start"}},
		{[]string{"install"}, "unchanged", []string{"start"}},
		{[]string{"add-route", "worker-1", "10.0.0.5"}, "changed", []string{"start", "reload"}},
		{[]string{"add-route", "worker-1", "10.0.0.5"}, "unchanged", []string{"start", "reload"}},
		{[]string{"--check", "remove-route", "worker-1"}, "changed", []string{"start", "reload"}},
		{[]string{"remove-route", "worker-1"}, "changed", []string{"start", "reload", "reload"}},
	}
	for i, s := range steps {
		r := l.run(t, s.args...)
		if r.code != 0 || r.last() != s.last {
			t.Fatalf("step %d %v: exit %d, last %q, want %q\nstdout: %s\nstderr: %s", i, s.args, r.code, r.last(), s.last, r.stdout, r.stderr)
		}
		if got := calls(); !slices.Equal(got, s.calls) {
			t.Errorf("step %d %v: service calls %v, want %v", i, s.args, got, s.calls)
		}
	}
}

// TestInstallOnAFreshImage: install on a VM without haproxy updates apt's
// lists before it installs (a fresh cloud image has none, and apt-get
// install alone then finds no haproxy), and goes on from the lists there
// are when the update fails. apt-get here is a stand-in that answers as
// apt-get does (no package without lists: "Unable to locate package",
// exit 100) and records what it was asked; on install it puts the real
// haproxy on PATH.
func TestInstallOnAFreshImage(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not on PATH: install Debian's haproxy package (scripts/deps.sh does) to test haproxy-lb.sh")
	}
	if filepath.Dir(haproxy) == "/usr/bin" || filepath.Dir(haproxy) == "/bin" {
		t.Skipf("haproxy is in %s, which the script needs on PATH: cannot hide it", filepath.Dir(haproxy))
	}
	const aptGet = `#!/bin/sh
printf '%s\n' "$*" >> "$APT_LOG"
case " $* " in
*" update "*) [ "${APT_UPDATE_EXIT:-0}" = 0 ] && touch "$APT_LISTS"; exit "${APT_UPDATE_EXIT:-0}" ;;
*" install "*)
  if [ ! -e "$APT_LISTS" ]; then echo "E: Unable to locate package haproxy" >&2; exit 100; fi
  ln -sf "$REAL_HAPROXY" "$FAKE_BIN/haproxy" ;;
esac
`
	for _, tt := range []struct {
		name       string
		updateExit int
		oldLists   bool // lists from before (the update fails, install still finds haproxy)
		want       []string
		warning    string
	}{
		{"fresh image: update, then install", 0, false, []string{"update", "install haproxy"}, ""},
		{"update fails, old lists: install goes on", 100, true, []string{"update", "install haproxy"}, "apt-get update failed (above); installing from the lists there are"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			log := filepath.Join(bin, "apt.log")
			lists := filepath.Join(bin, "lists")
			if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(aptGet), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.oldLists {
				if err := os.WriteFile(lists, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l := newLB(t, "PATH="+bin+":/usr/bin:/bin", "APT_LOG="+log, "APT_LISTS="+lists,
				"APT_UPDATE_EXIT="+strconv.Itoa(tt.updateExit), "REAL_HAPROXY="+haproxy, "FAKE_BIN="+bin)
			r := l.run(t, "install")
			if r.code != 0 || r.last() != "changed" {
				t.Fatalf("install: exit %d, last line %q\nstdout:\n%s\nstderr:\n%s", r.code, r.last(), r.stdout, r.stderr)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				switch {
				case strings.HasSuffix(line, " update"):
					got = append(got, "update")
				case strings.HasSuffix(line, " install haproxy"):
					got = append(got, "install haproxy")
				default:
					got = append(got, line)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("apt-get was asked %q, want %q", got, tt.want)
			}
			if !strings.Contains(r.stderr, tt.warning) {
				t.Errorf("stderr lacks %q:\n%s", tt.warning, r.stderr)
			}
			haproxyCheck(t, l.conf)
		})
	}
}
