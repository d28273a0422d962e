package externallb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tackerScript is heatsible's own script of Tacker's install_external_lb.sh
// contract (the e2e test runs it on the bed's lb host too).
const tackerScript = "../../testdata/package/Scripts/install_external_lb.sh"

// baseCfg stands for the haproxy.cfg a fresh VM has before the script
// appends to it (Debian's default, shortened to what haproxy -c needs here).
const baseCfg = `global
	log /dev/log	local0
	user haproxy
	group haproxy

defaults
	log	global
	mode	http
	option	httplog
	timeout connect 5000
	timeout client  50000
	timeout server  50000
`

// TestTackerRoleOnLocalhost runs the external_lb role with a script of
// Tacker's contract on this machine (real ansible-playbook, real haproxy -c,
// the script's haproxy.cfg in a temporary directory, no service): the script
// runs once, as Tacker runs it; scale-out, scale-in and a re-run edit only
// whole server lines of backend kubernetes-nodeport, each exactly once; a dry
// run changes nothing and shows the diff; a file haproxy refuses never goes
// live; no backend is refused.
func TestTackerRoleOnLocalhost(t *testing.T) {
	t.Parallel()
	needHaproxy(t)
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (scripts/deps.sh installs Debian's ansible)")
	}
	dir := t.TempDir()
	inv := "lb ansible_connection=local ansible_python_interpreter=" + python(t) + "\n"
	for name, content := range map[string]string{"site.yml": playbook, "inventory.ini": inv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	scriptPath, err := filepath.Abs(tackerScript)
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "host")
	cfg := filepath.Join(host, "etc/haproxy/haproxy.cfg")
	record := filepath.Join(host, "script-runs")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(baseCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	type route = map[string]string
	w20 := route{"name": "workernode-a", "address": "10.0.0.20", "server": "worker20"}
	w1 := route{"name": "workernode-b", "address": "10.0.0.1", "server": "worker1"}
	w12 := route{"name": "workernode-c", "address": "10.0.0.12", "server": "worker12"}
	vars := func(state string, install bool, routes ...route) map[string]any {
		if routes == nil {
			routes = []route{}
		}
		return map[string]any{
			"external_lb_interface": "tacker",
			"external_lb_script":    scriptPath, "external_lb_script_dest": filepath.Join(host, "usr/local/lib/heatsible/external_lb.sh"),
			"external_lb_install": install, "external_lb_state": state, "external_lb_routes": routes,
			"external_lb_masters": []string{"10.0.0.10"}, "external_lb_workers": []string{"10.0.0.20", "10.0.0.1"},
			"external_lb_env":         map[string]string{"TACKER_LB_HAPROXY_CFG": cfg, "TACKER_LB_NO_SERVICE": "1", "TACKER_LB_RECORD": record},
			"external_lb_haproxy_cfg": cfg, "external_lb_service": "",
			"proxy_env": map[string]string{"http_proxy": "http://proxy.example:3128", "https_proxy": "http://proxy.example:3129"},
		}
	}
	read := func() string {
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	runs := func() []string { // one line per run of the script
		b, _ := os.ReadFile(record)
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	line := func(name, addr string) string { return "    server  " + name + " " + addr + " check\n" }

	steps := []struct {
		name       string
		vars       map[string]any
		check      bool
		changed    func(int) bool
		same       bool     // haproxy.cfg must not change
		has, hasNo []string // lines haproxy.cfg has (once) / has not afterwards
		output     string   // substring of the output
	}{
		{name: "dry run on a fresh host", vars: vars("present", true, w20, w1), check: true, changed: positive, same: true,
			output: "would run: bash " + filepath.Join(host, "usr/local/lib/heatsible/external_lb.sh") + " -m 10.0.0.10 -w 10.0.0.20,10.0.0.1"},
		{name: "instantiate: the script runs", vars: vars("present", true, w20, w1), changed: positive,
			has:    []string{"backend kubernetes-nodeport\n", line("master10", "10.0.0.10"), line("worker20", "10.0.0.20"), line("worker1", "10.0.0.1")},
			output: "backend kubernetes-nodeport: master10 10.0.0.10, worker20 10.0.0.20, worker1 10.0.0.1"},
		{name: "instantiate again: the script does not run again", vars: vars("present", true, w20, w1), changed: zero, same: true},
		{name: "dry run of a scale-out", vars: vars("present", false, w12), check: true, changed: positive, same: true,
			output: "+    server  worker12 10.0.0.12 check"},
		{name: "scale-out", vars: vars("present", false, w12), changed: positive,
			has: []string{line("worker1", "10.0.0.1"), line("worker12", "10.0.0.12")}, output: "added worker12"},
		{name: "scale-out again", vars: vars("present", false, w12), changed: zero, same: true},
		{name: "dry run of a scale-in", vars: vars("absent", false, w1), check: true, changed: positive, same: true,
			output: "-    server  worker1 10.0.0.1 check"},
		{name: "scale-in of worker1 leaves worker12", vars: vars("absent", false, w1), changed: positive,
			has: []string{line("worker12", "10.0.0.12"), line("master10", "10.0.0.10")}, hasNo: []string{line("worker1", "10.0.0.1")}, output: "removed worker1"},
		{name: "scale-in again", vars: vars("absent", false, w1), changed: zero, same: true},
		{name: "heal-end: back with its address", vars: vars("present", false, w1), changed: positive,
			has: []string{line("worker1", "10.0.0.1"), line("worker12", "10.0.0.12")}},
	}
	for i, s := range steps {
		before := read()
		rc, out := runRole(t, dir, s.vars, s.check)
		if rc.failed != 0 || !s.changed(rc.changed) {
			t.Fatalf("step %d %q: recap %+v\n%s", i, s.name, rc, out)
		}
		if !strings.Contains(out, s.output) {
			t.Errorf("step %d %q: output lacks %q\n%s", i, s.name, s.output, out)
		}
		after := read()
		if s.same && after != before {
			t.Errorf("step %d %q changed haproxy.cfg:\n--- before\n%s--- after\n%s", i, s.name, before, after)
		}
		for _, l := range s.has {
			if n := strings.Count(after, l); n != 1 {
				t.Errorf("step %d %q: haproxy.cfg has %q %d times, want once:\n%s", i, s.name, l, n, after)
			}
		}
		for _, l := range s.hasNo {
			if strings.Contains(after, l) {
				t.Errorf("step %d %q: haproxy.cfg still has %q:\n%s", i, s.name, l, after)
			}
		}
		if !strings.HasPrefix(after, baseCfg) {
			t.Errorf("step %d %q: the file's start changed:\n%s", i, s.name, after)
		}
		if staged, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(staged) > 0 {
			t.Errorf("step %d %q left %d files in TMPDIR: %v", i, s.name, len(staged), staged[0].Name())
		}
		if !s.check || i > 0 {
			haproxyCheck(t, cfg)
		}
	}
	// The script ran once, with Tacker's arguments, as the connecting user
	// (here the test's: no become), in the home directory, with the proxy.
	home, _ := os.UserHomeDir()
	if got := runs(); len(got) != 1 ||
		!strings.Contains(got[0], "-m 10.0.0.10 -w 10.0.0.20,10.0.0.1 as ") || !strings.Contains(got[0], " in "+home+" https_proxy=http://proxy.example:3129") {
		t.Errorf("the script's runs: %q, want one run with -m 10.0.0.10 -w 10.0.0.20,10.0.0.1 in %s with the proxy", got, home)
	}

	// A duplicate line of a worker heatsible adds goes.
	dup := strings.Replace(read(), line("worker12", "10.0.0.12"), line("worker12", "10.0.0.12")+line("worker12", "10.0.0.12"), 1)
	if err := os.WriteFile(cfg, []byte(dup), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc, out := runRole(t, dir, vars("present", false, w12), false); rc.failed != 0 || rc.changed == 0 || strings.Count(read(), line("worker12", "10.0.0.12")) != 1 {
		t.Errorf("duplicate worker12: recap %+v, haproxy.cfg:\n%s\n%s", rc, read(), out)
	}

	// Tacker's own backend has no check port: haproxy refuses the file, so
	// the edit never goes live, and the message says the live file is
	// refused too.
	portless := strings.Replace(read(), "    default-server port 10256\n", "", 1)
	if err := os.WriteFile(cfg, []byte(portless), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, out := runRole(t, dir, vars("present", false, route{"name": "workernode-d", "address": "10.0.0.30", "server": "worker30"}), false)
	if rc.failed != 1 || !strings.Contains(out, "haproxy -c refuses") || !strings.Contains(out, "refuses the live file as it is as well") ||
		!strings.Contains(out, "neither service port nor check port") || read() != portless {
		t.Errorf("port-less checks: recap %+v\n%s", rc, out)
	}
	refusal(t, "port-less checks", out)

	// No backend (the script never ran, or wrote something else): refused,
	// nothing changed, and the script is not run outside instantiate.
	if err := os.WriteFile(cfg, []byte(baseCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, out = runRole(t, dir, vars("present", false, w12), false)
	if rc.failed != 1 || !strings.Contains(out, `no \"backend kubernetes-nodeport\" section`) || read() != baseCfg || len(runs()) != 1 {
		t.Errorf("no backend: recap %+v, runs %q\n%s", rc, runs(), out)
	}
	refusal(t, "no backend", out)
	// Twice the backend (the script was run twice by hand): refused, and
	// the script does not run a third time even at instantiate.
	twice := baseCfg + "backend kubernetes-nodeport\n" + line("worker1", "10.0.0.1") + "backend kubernetes-nodeport\n" + line("worker1", "10.0.0.1")
	if err := os.WriteFile(cfg, []byte(twice), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, out = runRole(t, dir, vars("present", true, w1), false)
	if rc.failed != 1 || !strings.Contains(out, "sections (lines 13, 15)") || read() != twice {
		t.Errorf("two backends: recap %+v\n%s", rc, out)
	}
	refusal(t, "two backends", out)
}

// refusal checks that the play failed through heatsible.nfv.refuse (exit code
// 6 in heatsible) and logs its message.
func refusal(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, `"heatsible_refused": true`) {
		t.Errorf("%s: not a heatsible.nfv.refuse refusal:\n%s", what, out)
	}
	t.Logf("%s: %s", what, fatalMsg(out))
}

// fatalMsg is the message of the task that failed, from ansible-playbook's
// output.
func fatalMsg(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "fatal: ") {
			if i := strings.Index(l, `"msg": `); i >= 0 {
				return l[i+7:]
			}
			return l
		}
	}
	return "(no fatal line)"
}
