package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/escapetest"
	"github.com/heatsible/heatsible/internal/params"
)

// jsonStrings returns every string (keys too) of the JSON document doc.
func jsonStrings(t *testing.T, doc string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				out = append(out, k)
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// controlWith returns testdata/hostile/control.json with edit applied to
// its k8s_cluster_installation_param, written to a file.
func controlWith(t *testing.T, edit func(p map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(hostileDir, "control.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	edit(req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any))
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValuesPrintedEscaped: a value of the input that heatsible prints
// (an unknown key, a duplicate key's path, a value it refuses, a topology's
// cluster or CP name) reaches the terminal escaped, in validate, plan and
// topology, as text and in -o json; a long one is cut with its length
// said.
func TestValuesPrintedEscaped(t *testing.T) {
	pkg := filepath.Join(hostileDir, "package")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	node := func(p map[string]any, k string) map[string]any { return p[k].(map[string]any) }
	unknownKey := controlWith(t, func(p map[string]any) { node(p, "master_node")[escapetest.HostileText] = "x" })
	longKey := controlWith(t, func(p map[string]any) { node(p, "master_node")[strings.Repeat("k", 5000)] = "x" })
	badUser := controlWith(t, func(p map[string]any) { node(p, "master_node")["username"] = escapetest.HostileText })
	// A duplicate key: written by hand, encoding/json would keep one.
	dupData, err := os.ReadFile(filepath.Join(hostileDir, "control.json"))
	if err != nil {
		t.Fatal(err)
	}
	dk, _ := json.Marshal(escapetest.HostileText)
	dupData = []byte(strings.Replace(string(dupData), `"aspect_id": "master_instance",`,
		`"aspect_id": "master_instance", `+string(dk)+`: 1, `+string(dk)+`: 2,`, 1))
	dupKey := filepath.Join(t.TempDir(), "dup.json")
	if err := os.WriteFile(dupKey, dupData, 0o600); err != nil {
		t.Fatal(err)
	}
	topoData, err := os.ReadFile(topo)
	if err != nil {
		t.Fatal(err)
	}
	yq := strconv.Quote(escapetest.HostileText) // Go's escapes are YAML's (json.Marshal leaves U+0085 raw, a YAML line break)
	writeTopo := func(name, from, to string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(strings.Replace(string(topoData), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badCluster := writeTopo("cluster.yaml", "cluster: k8s-a", "cluster: "+yq)
	badCP := writeTopo("cp.yaml", "  masterNode_CP1: 10.10.0.10", "  masterNode_CP1: 10.10.0.10\n  "+yq+": 10.10.0.11")
	req := filepath.Join(hostileDir, "control.json")

	for _, tt := range []struct {
		name string
		args []string
		want string // the escaped form that must be shown
	}{
		{"unknown key", []string{"validate", "--request", unknownKey, "--package", pkg}, `\x1b[2J`},
		{"long unknown key", []string{"validate", "--request", longKey, "--package", pkg}, "(5000 bytes)"},
		{"duplicate key", []string{"validate", "--request", dupKey, "--package", pkg}, `\x1b[2J`},
		{"refused value", []string{"validate", "--request", badUser, "--package", pkg}, `\x1b[2J`},
		{"topology cluster name", []string{"plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", badCluster}, `\x1b[2J`},
		{"topology CP name", []string{"topology", "--request", req, "--topology", badCP}, `\u202e`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, out, errs := heatsible(t, tt.args...)
			if r := escapetest.TerminalUnsafe(out + errs); r >= 0 {
				t.Errorf("the output holds %U unescaped:\nstdout:\n%q\nstderr:\n%q", r, out, errs)
			}
			if !strings.Contains(out+errs, tt.want) {
				t.Errorf("the output does not show the value escaped (%s):\nstdout:\n%s\nstderr:\n%s", tt.want, out, errs)
			}
			_, out, errs = heatsible(t, append([]string{"-o", "json"}, tt.args...)...)
			for _, doc := range []string{out, errs} {
				if strings.TrimSpace(doc) == "" || !strings.HasPrefix(strings.TrimSpace(doc), "{") {
					if r := escapetest.TerminalUnsafe(doc); r >= 0 {
						t.Errorf("-o json: %U unescaped in %q", r, doc)
					}
					continue
				}
				for _, s := range jsonStrings(t, doc) {
					if r := escapetest.TerminalUnsafe(s); r >= 0 {
						t.Errorf("-o json: a string holds %U unescaped: %q", r, s)
					}
				}
			}
		})
	}
}

// TestHostileTopologies: a topology file is input too. A value that would
// reach a host (a CP address with a zone, a volume id or device with shell
// or Jinja, a node address with a newline) is refused at load with exit
// code 2 and its path, and run connects to nothing. On b6df54c these
// loaded, and run went on to connect to the Ansible host.
func TestHostileTopologies(t *testing.T) {
	kh := hostileEnv(t)
	lc := listen(t)
	req := filepath.Join(hostileDir, "control.json")
	pkg := filepath.Join(hostileDir, "package")
	topoData, err := os.ReadFile(filepath.Join(td, "topology", "k8s-a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, from, to, path string }{
		{"cp address zone", "  storage_server_CP: 10.10.0.45", `  storage_server_CP: "fe80::45%eth0 rw,no_root_squash"`, "topology.cps.storage_server_CP"},
		{"volume id shell", "id: 5b1d3a2c-0000-4000-8000-000000000001", `id: "5b1d3a2c$(touch${IFS}/tmp/pwned)"`, "topology.volumes[0].id"},
		{"volume id jinja", "id: 5b1d3a2c-0000-4000-8000-000000000001", `id: "{{ lookup('pipe', 'id') }}"`, "topology.volumes[0].id"},
		{"device CR", "device: /dev/vdb", `device: "/dev/vdb\r"`, "topology.volumes[0].device"},
		{"device glob", "device: /dev/vdb", `device: "/dev/vd?"`, "topology.volumes[0].device"},
		{"address zone newline", "    address: 10.10.0.45\n", "    address: \"fe80::45%x\\n10.0.0.0/8(rw)\"\n", "topology.nodes[4].address"},
		{"cluster jinja", "cluster: k8s-a", `cluster: "{{ lookup('pipe', 'id') }}"`, "topology.cluster"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(topoData), tt.from) {
				t.Fatalf("%q is not in k8s-a.yaml", tt.from)
			}
			topo := filepath.Join(t.TempDir(), "topo.yaml")
			if err := os.WriteFile(topo, []byte(strings.Replace(string(topoData), tt.from, tt.to, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo},
				{"run", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo,
					"--ansible-host", lc.ln.Addr().String(), "--known-hosts", kh},
			} {
				before := lc.count.Load()
				code, out, errs := heatsibleTimeout(t, 60*time.Second, args...)
				if n := lc.count.Load() - before; n != 0 {
					t.Errorf("%s: %d connection(s) to the Ansible host; want none", args[0], n)
				}
				if code != 2 {
					t.Errorf("%s: exit code %d, want 2\nstdout:\n%s\nstderr:\n%s", args[0], code, out, errs)
				}
				if !strings.Contains(errs, tt.path+": ") {
					t.Errorf("%s: stderr does not name %s:\n%s", args[0], tt.path, errs)
				}
			}
		})
	}
}

// TestRefusalNeverEchoesACredential: a proxy setting that is refused never
// brings its user information along into the message: not on stderr, not
// in -o json, not in the run record's run.log (written before the request
// is known well enough for the masker to know its secrets). On b6df54c a
// no_proxy holding user:password@ was printed whole in all three.
func TestRefusalNeverEchoesACredential(t *testing.T) {
	const secret = "Zs3cr3tPw9"
	pkg := filepath.Join(hostileDir, "package")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	for _, tt := range []struct{ name, field, value string }{
		{"no_proxy entry with credentials", "no_proxy", "10.0.0.1,admin:" + secret + "@proxy.example.com"},
		{"no_proxy URL with credentials", "no_proxy", "http://admin:" + secret + "@proxy.example.com:3128"},
		{"http_proxy password with a quote", "http_proxy", "http://admin:" + secret + "'x@proxy.example.com:3128"},
		{"http_proxy password with %", "http_proxy", "http://admin:" + secret + "%25@proxy.example.com:3128"},
		{"https_proxy path after a password", "https_proxy", "http://admin:" + secret + "@proxy.example.com:3128/a?b"},
		{"https_proxy bad port after a password", "https_proxy", "http://admin:" + secret + "@proxy.example.com:port1"},
		{"http_proxy password with '/' and '@'", "http_proxy", "http://admin:" + secret + "/x@y@proxy.example.com:3128"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kh := hostileEnv(t)
			state := os.Getenv("HEATSIBLE_STATE_DIR")
			req := controlWith(t, func(p map[string]any) { p["proxy"].(map[string]any)[tt.field] = tt.value })
			want := params.Prefix + ".proxy." + tt.field
			for _, args := range [][]string{
				{"validate", "--request", req, "--package", pkg},
				{"-o", "json", "validate", "--request", req, "--package", pkg},
				{"-o", "json", "run", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo,
					"--ansible-host", "127.0.0.1:1", "--known-hosts", kh},
			} {
				code, out, errs := heatsible(t, args...)
				if code != 2 {
					t.Errorf("%v: exit code %d, want 2\n%s%s", args, code, out, errs)
				}
				if !strings.Contains(errs, want) {
					t.Errorf("%v: stderr does not name %s:\n%s", args, want, errs)
				}
				if strings.Contains(out+errs, secret) {
					t.Errorf("%v: the output holds the password:\n%s%s", args, out, errs)
				}
			}
			logs := 0
			filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(p)
				if filepath.Base(p) == "run.log" {
					logs++
					if !strings.Contains(string(b), want) {
						t.Errorf("%s does not name %s:\n%s", p, want, b)
					}
				}
				if strings.Contains(string(b), secret) {
					t.Errorf("%s holds the password:\n%s", p, b)
				}
				return nil
			})
			if logs == 0 {
				t.Errorf("run wrote no run.log under %s", state)
			}
		})
	}
}

// TestLimitFileReadHere: run reads --limit @FILE on this machine, as plan
// does (the Ansible host has no such file): a missing one, or a line
// ansible-playbook would read as a pattern that names nothing, stops the
// run with exit code 2 before any connection.
func TestLimitFileReadHere(t *testing.T) {
	kh := hostileEnv(t)
	lc := listen(t)
	req := filepath.Join(hostileDir, "control.json")
	pkg := filepath.Join(hostileDir, "package")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	comma := filepath.Join(t.TempDir(), "retry")
	if err := os.WriteFile(comma, []byte("master-0,storage-server\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []string{"@" + filepath.Join(t.TempDir(), "missing"), "@" + comma} {
		for _, args := range [][]string{
			{"plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--limit", limit},
			{"run", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--limit", limit,
				"--ansible-host", lc.ln.Addr().String(), "--known-hosts", kh},
		} {
			before := lc.count.Load()
			code, out, errs := heatsibleTimeout(t, 60*time.Second, args...)
			if n := lc.count.Load() - before; n != 0 {
				t.Errorf("%s --limit %s: %d connection(s)", args[0], limit, n)
			}
			if code != 2 || !strings.Contains(errs, "--limit "+limit) {
				t.Errorf("%s --limit %s: exit %d, want 2 naming --limit\n%s%s", args[0], limit, code, out, errs)
			}
		}
	}
}
