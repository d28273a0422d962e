package render

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/params"
)

// kubesprayProxyPlay holds kubespray's own uses of http_proxy and
// https_proxy, copied from kubernetes-sigs/kubespray at 46dbdd3 with only
// the target files moved into the test's directory (out): the Debian
// bootstrap (roles/bootstrap_os/tasks/debian.yml, a raw shell command run
// with become), the Fedora CoreOS bootstrap (roles/bootstrap_os/tasks/
// fedora-coreos.yml, an unquoted export; rpm-ostree left out) and the
// container runtimes' systemd drop-in (roles/container-engine/containerd/
// templates/http-proxy.conf.j2). The variables come from the vars file
// heatsible writes for kubespray, as every kubespray run gets it (-e @).
const kubesprayProxyPlay = `- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Add http_proxy to /etc/apt/apt.conf if http_proxy is defined
      raw: echo 'Acquire::http::proxy "{{ http_proxy }}";' >> {{ out }}/apt.conf
      when:
        - http_proxy is defined

    - name: Add https_proxy to /etc/apt/apt.conf if https_proxy is defined
      raw: echo 'Acquire::https::proxy "{{ https_proxy }}";' >> {{ out }}/apt.conf
      when:
        - https_proxy is defined

    - name: Remove unused packages (fedora-coreos.yml, without rpm-ostree)
      raw: "export http_proxy={{ http_proxy | default('') }};true"

    - name: Containerd | Write containerd proxy drop-in
      template:
        src: "{{ out }}/http-proxy.conf.j2"
        dest: "{{ out }}/http-proxy.conf"
        mode: "0644"
      when: http_proxy is defined or https_proxy is defined
`

// containerdDropIn is roles/container-engine/containerd/templates/
// http-proxy.conf.j2 at 46dbdd3, verbatim.
const containerdDropIn = `[Service]
Environment={% if http_proxy is defined %}"HTTP_PROXY={{ http_proxy }}"{% endif %} {% if https_proxy is defined %}"HTTPS_PROXY={{ https_proxy }}"{% endif %} {% if no_proxy is defined %}"NO_PROXY={{ no_proxy }}"{% endif %}
`

// TestKubesprayShellUse renders kubespray's uses of the proxy URLs with the
// real ansible-playbook on this machine, from the vars file heatsible hands
// kubespray, and shows what would have run. Every value of a rejected
// class is refused by validate with its field path (on b6df54c all but the
// newline passed); rendered past validation it does what its class says
// (a marker file created by the injected command, a second apt.conf
// statement, a systemd specifier), which is why it is refused. Accepted
// URLs render as exactly one apt.conf line each and run nothing.
func TestKubesprayShellUse(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible); .ci/run installs it")
	}
	type effect int
	const (
		runsCommand      effect = iota // the marker file is created
		aptStatement                   // apt.conf gets an APT::Update::Pre-Invoke (run as root by apt-get update)
		systemdSpecifier               // the drop-in holds a '%' that systemd reads as a specifier
	)
	for _, tc := range []struct {
		name  string
		field string // http_proxy or https_proxy
		value func(marker string) string
		does  effect
	}{
		{"quote semicolon IFS in the path", "http_proxy", func(m string) string {
			return "http://proxy.example.com:3128/';touch${IFS}" + m + ";'"
		}, runsCommand},
		{"command substitution in the password", "http_proxy", func(m string) string {
			return "http://user1:$(touch${IFS}" + m + ")@proxy.example.com:3128"
		}, runsCommand},
		{"backticks in the password", "http_proxy", func(m string) string {
			return "http://user1:`touch${IFS}" + m + "`@proxy.example.com:3128"
		}, runsCommand},
		{"double quote and semicolon", "https_proxy", func(m string) string {
			return `http://proxy.example.com:3128/";APT::Update::Pre-Invoke{"touch${IFS}` + m + `"};"`
		}, aptStatement},
		{"newline", "http_proxy", func(m string) string {
			return "http://proxy.example.com:3128/\nAPT::Update::Pre-Invoke{\"touch${IFS}" + m + "\"};"
		}, aptStatement},
		{"percent-encoded password", "http_proxy", func(string) string {
			return "http://user1:p%41ss@proxy.example.com:3128"
		}, systemdSpecifier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "PWNED")
			v := tc.value(marker)
			req := loadRequest(t, "kubespray_lb")
			setProxy(req, tc.field, v)
			err := req.Validate(params.Options{PackageDir: "../../testdata/package", RequirePackage: true})
			want := params.Prefix + ".proxy." + tc.field + ": "
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("validate: %v; want a problem naming %s", err, want)
			}
			ran, aptConf, dropIn := renderKubesprayProxy(t, dir, req)
			apt := aptConfig(t, dir)
			switch tc.does {
			case runsCommand:
				if _, err := os.Stat(marker); err != nil {
					t.Errorf("the injected command did not run (%v); the class is not what the test says", err)
				}
			case aptStatement:
				if !strings.Contains(apt, "Pre-Invoke") && !strings.Contains(aptConf, "\nAPT::Update::Pre-Invoke") {
					t.Errorf("apt.conf has no second statement:\n%s\napt-config:\n%s", aptConf, apt)
				}
			case systemdSpecifier:
				if !regexp.MustCompile(`HTTP_PROXY=[^"]*%[A-Za-z0-9]`).MatchString(dropIn) {
					t.Errorf("the drop-in has no specifier:\n%s", dropIn)
				}
			}
			t.Logf("what would have run (validate refuses it):\n%s\napt.conf:\n%s\napt-config reads:\n%s\nhttp-proxy.conf:\n%s", ran, aptConf, apt, dropIn)
		})
	}

	// What validate accepts renders as written, one line each, and runs
	// nothing besides what kubespray wrote.
	for _, url := range []string{
		"http://user1:Pa.ss_w~rd-9@proxy.example.com:3128/",
		"https://proxy.example.com",
		"http://[2001:db8::1]:3128",
		"http://10.0.0.1:8080",
	} {
		t.Run("accepted "+url, func(t *testing.T) {
			dir := t.TempDir()
			req := loadRequest(t, "kubespray_lb")
			setProxy(req, "http_proxy", url)
			setProxy(req, "https_proxy", url)
			if err := req.Validate(params.Options{PackageDir: "../../testdata/package", RequirePackage: true}); err != nil {
				t.Fatalf("validate: %v", err)
			}
			_, aptConf, dropIn := renderKubesprayProxy(t, dir, req)
			if want := "Acquire::http::proxy \"" + url + "\";\nAcquire::https::proxy \"" + url + "\";\n"; aptConf != want {
				t.Errorf("apt.conf:\n%s\nwant:\n%s", aptConf, want)
			}
			if apt := aptConfig(t, dir); apt != "" && (!strings.Contains(apt, `Acquire::http::proxy "`+url+`";`) || strings.Contains(apt, "Pre-Invoke")) {
				t.Errorf("apt-config reads:\n%s", apt)
			}
			if want := `"HTTP_PROXY=` + url + `" "HTTPS_PROXY=` + url + `"`; !strings.Contains(dropIn, want) || strings.Contains(dropIn, "%") {
				t.Errorf("http-proxy.conf:\n%s\nwant %s and no %%", dropIn, want)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				switch e.Name() {
				case "apt.conf", "http-proxy.conf", "http-proxy.conf.j2", "kubespray-vars.yml", "play.yml", "hosts":
				default:
					t.Errorf("the run left %s in its directory", e.Name())
				}
			}
		})
	}
}

// kubeadmSANs is how kubespray writes the API server certificate's SANs
// into kubeadm's configuration (roles/kubernetes/control-plane/templates/
// kubeadm-config.v1beta4.yaml.j2 at 46dbdd3, lines 350-353, with the
// sections around them), supplementary_addresses_in_ssl_keys among them
// (tasks/kubeadm-setup.yml aggregates apiserver_sans).
const kubeadmSANs = `apiServer:
  certSANs:
{% for san in apiserver_sans %}
  - "{{ san }}"
{% endfor %}
controllerManager:
  extraArgs: []
`

// TestKubesprayKubeadmSANs: the cluster CP's address (a topology value)
// reaches kubeadm's configuration through supplementary_addresses_in_ssl_keys.
// One with a quote and a newline after an IPv6 zone's '%' (accepted by
// b6df54c's topology load) adds keys to the apiServer section, here
// authorization-mode AlwaysAllow; the topology refuses it now, with its
// path.
func TestKubesprayKubeadmSANs(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible); .ci/run installs it")
	}
	// An IPv6 zone carries it: Go's parser takes any text after '%'.
	evil := "fe80::a%x\"\n  extraArgs:\n  - name: authorization-mode\n    value: AlwaysAllow\n  # the closing quote lands here:"
	for _, tc := range []struct {
		name, addr string
		injected   bool
	}{{"injected", evil, true}, {"address", "10.10.0.10", false}, {"host name", "api.cluster.example", false}} {
		t.Run(tc.name, func(t *testing.T) {
			req, topo := scaleFixture(t, "kubespray_lb")
			cp := req.Cluster.MasterNode.ClusterCPName
			topo.CPs[cp] = tc.addr
			err := topo.Validate()
			if tc.injected != (err != nil) || (err != nil && !strings.Contains(err.Error(), "topology.cps."+cp+": ")) {
				t.Errorf("topology.Validate: %v (injected %v)", err, tc.injected)
			}
			dir := t.TempDir()
			vars, err := kubesprayVarsFile(req, kubesprayVars(req, topo))
			if err != nil {
				t.Fatal(err)
			}
			play := "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n" +
				"    - name: Kubeadm | aggregate all SANs (kubeadm-setup.yml, the request's part)\n" +
				"      set_fact:\n        apiserver_sans: \"{{ ['kubernetes', supplementary_addresses_in_ssl_keys] | flatten | select | unique }}\"\n" +
				"    - name: Kubeadm | Create kubeadm config\n      template:\n        src: \"{{ out }}/kubeadm.j2\"\n        dest: \"{{ out }}/kubeadm-config.yaml\"\n        mode: \"0640\"\n"
			for name, content := range map[string]string{"kubespray-vars.yml": string(vars), "play.yml": play, "kubeadm.j2": kubeadmSANs} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("ansible-playbook", "-i", "localhost,", "-e", "@"+filepath.Join(dir, "kubespray-vars.yml"), "-e", "out="+dir, filepath.Join(dir, "play.yml"))
			// the interpreter pinned, as every other local-connection test
			// does: ansible-core 2.16's discovery tries python3.12 first,
			// and on a machine with pyenv's shims in PATH that is a shim
			// without a python3.12 behind it
			cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCALHOST_WARNING=False", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ansible-playbook: %v\n%s", err, out)
			}
			cfg, err := os.ReadFile(filepath.Join(dir, "kubeadm-config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kubeadm's configuration as kubespray would write it:\n%s", cfg)
			var doc struct {
				APIServer map[string]any `yaml:"apiServer"`
			}
			if err := yaml.Unmarshal(cfg, &doc); err != nil {
				t.Fatalf("%v\n%s", err, cfg)
			}
			if _, got := doc.APIServer["extraArgs"]; got != tc.injected {
				t.Errorf("apiServer.extraArgs present: %v, want %v\n%s", got, tc.injected, cfg)
			}
		})
	}
}

func setProxy(req *params.Request, field, v string) {
	if field == "http_proxy" {
		req.Cluster.Proxy.HTTPProxy = v
	} else {
		req.Cluster.Proxy.HTTPSProxy = v
	}
}

// renderKubesprayProxy writes the vars file heatsible hands kubespray for
// req and runs kubesprayProxyPlay with it in dir. It returns the shell
// commands Ansible ran (its -vvv EXEC lines), apt.conf and the drop-in.
func renderKubesprayProxy(t *testing.T, dir string, req *params.Request) (ran, aptConf, dropIn string) {
	t.Helper()
	_, topo := scaleFixture(t, "kubespray_lb")
	vars, err := kubesprayVarsFile(req, kubesprayVars(req, topo))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"kubespray-vars.yml": string(vars),
		"play.yml":           kubesprayProxyPlay,
		"http-proxy.conf.j2": containerdDropIn,
		"hosts":              "localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(context.Background(), "ansible-playbook", "-vvv", "-i", filepath.Join(dir, "hosts"),
		"-e", "@"+filepath.Join(dir, "kubespray-vars.yml"), "-e", "out="+dir, filepath.Join(dir, "play.yml"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCALHOST_WARNING=False", "ANSIBLE_INVENTORY_UNPARSED_WARNING=False")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		// A broken quote makes the raw task fail after it ran what it ran.
		if !errors.As(err, &ee) {
			t.Fatalf("ansible-playbook: %v\n%s", err, out)
		}
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "EXEC ") && (strings.Contains(l, "apt.conf") || strings.Contains(l, "export http_proxy")) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) == 0 {
		t.Fatalf("ansible-playbook ran none of kubespray's commands:\n%s", out)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "apt.conf"))
	d, _ := os.ReadFile(filepath.Join(dir, "http-proxy.conf"))
	return strings.Join(lines, "\n"), string(a), string(d)
}

// aptConfig is what apt reads from dir's apt.conf: the proxy settings and
// any Pre-Invoke hook (apt-config dump), or "" without apt-config.
func aptConfig(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("apt-config"); err != nil {
		return ""
	}
	out, err := exec.Command("apt-config", "-c", filepath.Join(dir, "apt.conf"), "dump").CombinedOutput()
	if err != nil {
		return "apt-config: " + err.Error() + ": " + string(out)
	}
	var keep []string
	for _, l := range bytes.Split(out, []byte("\n")) {
		if bytes.Contains(l, []byte("::proxy")) || bytes.Contains(l, []byte("Pre-Invoke")) {
			keep = append(keep, string(l))
		}
	}
	return strings.Join(keep, "\n")
}
