package externallb

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/collection"
)

// playbook runs the external_lb role on this machine, as heatsible's play
// runs it on the load-balancer VM, minus become.
const playbook = `---
- name: External load balancer
  hosts: lb
  gather_facts: false
  roles:
    - role: external_lb
`

var recapRE = regexp.MustCompile(`(?m)^lb\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

type recap struct{ changed, failed int }

// runRole runs ansible-playbook with vars (as -e @file) and returns the
// recap of host lb and the output.
func runRole(t *testing.T, dir string, vars map[string]any, check bool) (recap, string) {
	t.Helper()
	roles, err := filepath.Abs("../../roles")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	varsFile := filepath.Join(dir, "vars.json")
	if err := os.WriteFile(varsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-i", "inventory.ini", "-e", "@" + varsFile, "site.yml"}
	if check {
		args = append(args, "--check", "--diff") // as heatsible runs a dry run
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", args...)
	cmd.Dir = dir
	colls, err := collection.Lay(filepath.Join(dir, "collections"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(),
		"ANSIBLE_ROLES_PATH="+roles,
		"ANSIBLE_COLLECTIONS_PATH="+colls, // heatsible.nfv, the role's plugins
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-local"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(dir, "ansible-remote"),
		"ANSIBLE_HOME="+filepath.Join(dir, "ansible-home"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0", "NO_COLOR=1",
		"TMPDIR="+filepath.Join(dir, "tmp"), // where the dry run stages the script
	)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	m := recapRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("ansible-playbook %v: no recap for lb (%v)\n%s", args, err, out)
	}
	changed, _ := strconv.Atoi(string(m[2]))
	failed, _ := strconv.Atoi(string(m[4]))
	return recap{changed: changed, failed: failed}, string(out)
}

// TestRoleOnLocalhost runs the role with real ansible-playbook against
// this machine (connection local, no become), the sample script's files
// pointed into a temporary directory: a dry run on a fresh host creates
// nothing, the first run changes, the second does not, absent removes, and
// a script that breaks the interface fails the play.
func TestRoleOnLocalhost(t *testing.T) {
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
	scriptPath, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "host") // the load balancer's files
	dest := filepath.Join(host, "usr/local/lib/heatsible/external_lb.sh")
	conf := filepath.Join(host, "etc/haproxy/haproxy.cfg")
	state := filepath.Join(host, "var/lib/heatsible-lb")
	env := map[string]string{
		"HAPROXY_LB_CONF": conf, "HAPROXY_LB_STATE": state, "HAPROXY_LB_NO_SERVICE": "1",
		"HAPROXY_LB_PORTS": "18080:30080",
	}
	vars := func(state string, install bool, routes ...map[string]string) map[string]any {
		if routes == nil {
			routes = []map[string]string{}
		}
		return map[string]any{
			"external_lb_script": scriptPath, "external_lb_script_dest": dest,
			"external_lb_install": install, "external_lb_state": state,
			"external_lb_routes": routes, "external_lb_env": env,
		}
	}
	w1 := map[string]string{"name": "worker-1", "address": "10.10.0.21"}
	w2 := map[string]string{"name": "worker-2", "address": "fd00::22"}
	lbScript := &lb{dir: host, conf: conf, state: state, env: append(os.Environ(),
		"HAPROXY_LB_CONF="+conf, "HAPROXY_LB_STATE="+state, "HAPROXY_LB_NO_SERVICE=1")}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name    string
		vars    map[string]any
		check   bool
		changed func(int) bool
		routes  []string // list-routes afterwards (nil: state dir must not exist)
		same    bool     // no file of the host may change
		output  string   // substring of the output
	}{
		{name: "dry run on a fresh host", vars: vars("present", true, w1, w2), check: true,
			changed: positive, same: true, output: "would add route worker-1 10.10.0.21"},
		{name: "instantiate: install and add the workers", vars: vars("present", true, w1, w2),
			changed: positive, routes: []string{"worker-1=10.10.0.21", "worker-2=fd00::22"}, output: "add route worker-2 fd00::22"},
		{name: "the same again", vars: vars("present", true, w1, w2),
			changed: zero, routes: []string{"worker-1=10.10.0.21", "worker-2=fd00::22"}, same: true, output: "nothing to change"},
		{name: "dry run of a scale-in", vars: vars("absent", false, w1), check: true,
			changed: positive, routes: []string{"worker-1=10.10.0.21", "worker-2=fd00::22"}, same: true, output: "would remove route worker-1"},
		{name: "scale-in removes the route", vars: vars("absent", false, w1),
			changed: positive, routes: []string{"worker-2=fd00::22"}, output: "remove route worker-1 10.10.0.21"},
		{name: "scale-in again", vars: vars("absent", false, w1),
			changed: zero, routes: []string{"worker-2=fd00::22"}, same: true},
		{name: "scale-out adds it back", vars: vars("present", false, w1),
			changed: positive, routes: []string{"worker-1=10.10.0.21", "worker-2=fd00::22"}},
	}
	for i, s := range steps {
		before := lbScript.snapshot(t)
		rc, out := runRole(t, dir, s.vars, s.check)
		if rc.failed != 0 || !s.changed(rc.changed) {
			t.Fatalf("step %d %q: recap %+v\n%s", i, s.name, rc, out)
		}
		if !strings.Contains(out, s.output) {
			t.Errorf("step %d %q: output lacks %q\n%s", i, s.name, s.output, out)
		}
		if staged, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(staged) > 0 {
			t.Errorf("step %d %q left %d files in TMPDIR (the staged script?): %v", i, s.name, len(staged), staged[0].Name())
		}
		if after := lbScript.snapshot(t); s.same && !mapsEqual(before, after) {
			t.Errorf("step %d %q changed files:\nbefore %q\nafter  %q", i, s.name, before, after)
		}
		if s.routes == nil {
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("step %d %q: state dir exists (%v)", i, s.name, err)
			}
			continue
		}
		if got := lbScript.routes(t); !slices.Equal(got, s.routes) {
			t.Errorf("step %d %q: routes %v, want %v", i, s.name, got, s.routes)
		}
		haproxyCheck(t, conf)
		if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("step %d %q: installed script: %v %v", i, s.name, fi, err)
		}
	}

	// A script that answers "ok" breaks the interface: the play fails and
	// says which command did.
	broken := filepath.Join(dir, "broken.sh")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	v := vars("present", true, w1)
	v["external_lb_script"] = broken
	v["external_lb_script_dest"] = filepath.Join(dir, "broken-dest", "external_lb.sh")
	rc, out := runRole(t, dir, v, false)
	if rc.failed != 1 || !strings.Contains(out, "broke heatsible's script interface") ||
		!strings.Contains(out, "add-route worker-1 10.10.0.21 -> ok") {
		t.Errorf("broken script: recap %+v\n%s", rc, out)
	}
}

func positive(n int) bool { return n > 0 }
func zero(n int) bool     { return n == 0 }

func python(t *testing.T) string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("python3 is not on PATH")
	return ""
}

// TestRoleInstallGetsTheProxy: the script's install (the sample runs
// apt-get update and install on a VM without haproxy) gets the request's
// proxies, as the nodes' apt does. apt-get is a stand-in that records its
// arguments with the proxies it was given, and puts the real haproxy on
// PATH on install.
func TestRoleInstallGetsTheProxy(t *testing.T) {
	t.Parallel()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not on PATH: install Debian's haproxy package (scripts/deps.sh does) to test haproxy-lb.sh")
	}
	if d := filepath.Dir(haproxy); d == "/usr/bin" || d == "/bin" {
		t.Skipf("haproxy is in %s, which the script needs on PATH: cannot hide it", d)
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (scripts/deps.sh installs Debian's ansible)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "apt.log")
	aptGet := `#!/bin/sh
printf '%s http_proxy=%s https_proxy=%s\n' "$*" "${http_proxy-}" "${https_proxy-}" >> ` + log + `
case " $* " in *" install "*) ln -sf ` + haproxy + ` ` + bin + `/haproxy ;; esac
`
	inv := "lb ansible_connection=local ansible_python_interpreter=" + python(t) + "\n"
	for name, content := range map[string]string{"site.yml": playbook, "inventory.ini": inv, "bin/apt-get": aptGet} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	scriptPath, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "host")
	vars := map[string]any{
		"external_lb_script": scriptPath, "external_lb_script_dest": filepath.Join(host, "usr/local/lib/heatsible/external_lb.sh"),
		"external_lb_install": true, "external_lb_state": "present", "external_lb_routes": []map[string]string{},
		"external_lb_env": map[string]string{
			"PATH":            bin + ":/usr/bin:/bin", // no haproxy: the script installs it
			"HAPROXY_LB_CONF": filepath.Join(host, "etc/haproxy/haproxy.cfg"), "HAPROXY_LB_STATE": filepath.Join(host, "var/lib/heatsible-lb"),
			"HAPROXY_LB_NO_SERVICE": "1", "HAPROXY_LB_PORTS": "18080:30080",
		},
		"proxy_env": map[string]string{"http_proxy": "http://proxy.example:3128", "https_proxy": "http://proxy.example:3129", "no_proxy": ""},
	}
	rc, out := runRole(t, dir, vars, false)
	if rc.failed != 0 || rc.changed == 0 {
		t.Fatalf("recap %+v, want changes and no failure\n%s", rc, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("apt-get was not run: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	const proxies = " http_proxy=http://proxy.example:3128 https_proxy=http://proxy.example:3129"
	if len(got) != 2 || !strings.HasSuffix(got[0], " update"+proxies) || !strings.HasSuffix(got[1], " install haproxy"+proxies) {
		t.Errorf("apt-get was asked:\n%s\nwant update, then install haproxy, each with%s", b, proxies)
	}
}
