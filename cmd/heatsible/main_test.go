package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const td = "../../testdata"

// TestMain keeps every run record the tests make out of the machine's state
// directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "heatsible-cli-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HEATSIBLE_STATE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func heatsible(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIExitCodes(t *testing.T) {
	req := filepath.Join(td, "requests", "valid.json")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	pkg := filepath.Join(td, "package")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		noStderr string
	}{
		{"valid", []string{"validate", "--request", req, "--package", pkg}, 0, "valid\n", "", ""},
		{"valid without package", []string{"validate", "--request", req}, 0, "valid\n", "pass --package", ""},
		{"bad cidr", []string{"validate", "--request", filepath.Join(td, "requests", "bad_cidr.json")}, 2, "",
			`additionalParams.k8s_cluster_installation_param.storage_server.nfs_server_setup_params[1].export_to: "10.10.0.0/33" is not an IP address or CIDR`, ""},
		{"password not echoed", []string{"validate", "--request", filepath.Join(td, "requests", "password_newline.json")}, 2, "", "storage_server.password", "pa\nss"},
		{"missing request file", []string{"validate", "--request", "/nonexistent.json"}, 2, "", "--request: cannot read", ""},
		{"no request flag", []string{"validate"}, 2, "", "required flag", ""},
		{"unknown flag", []string{"validate", "--nope"}, 2, "", "unknown flag", ""},
		{"no source", []string{"inventory", "--request", req}, 2, "", "--stack ID|NAME", ""},
		{"both sources", []string{"inventory", "--request", req, "--stack", "x", "--topology", topo}, 2, "", "not both", ""},
		{"inventory ini", []string{"inventory", "--request", req, "--topology", topo}, 0, "[kube_control_plane]\nmaster-0\n", "", "password"},
		{"inventory yaml", []string{"inventory", "--request", req, "--topology", topo, "--format", "yaml"}, 0, "kube_control_plane:\n", "", ""},
		{"bad format", []string{"inventory", "--request", req, "--topology", topo, "--format", "toml"}, 2, "", "want ini or yaml", ""},
		{"topology from file", []string{"topology", "--request", req, "--topology", topo}, 0, "storage_server_CP: 10.10.0.45", "", ""},
		{"topology mismatch", []string{"topology", "--request", filepath.Join(td, "requests", "external_lb.json"), "--topology", topo}, 2, "", "external_lb_param.ssh_cp_name", ""},
		{"misspelt role tag", []string{"run", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--tags", "nfs_clinet"}, 2, "", `"nfs_clinet": not a role`, ""},
		{"role and tags", []string{"run", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--role", "nfs_client", "--tags", "pv_register"}, 2, "", "either --role or --tags", ""},
		{"heat without credentials", []string{"topology", "--request", req, "--stack", "nope"}, 5, "", "OS_", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.code == 5 {
				for _, k := range []string{"OS_CLOUD", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "OS_CLIENT_CONFIG_FILE"} {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
				t.Setenv("HOME", t.TempDir()) // no ~/.config/openstack/clouds.yaml
			}
			code, out, errs := heatsible(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, out)
			}
			if !strings.Contains(errs, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, errs)
			}
			if tt.noStderr != "" && (strings.Contains(errs, tt.noStderr) || strings.Contains(out, tt.noStderr)) {
				t.Errorf("output contains %q", tt.noStderr)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	code, _, errs := heatsible(t, "-o", "json", "validate", "--request", filepath.Join(td, "requests", "wrong_types.json"))
	if code != 2 {
		t.Fatalf("code %d", code)
	}
	var out struct {
		ExitCode int `json:"exit_code"`
		Problems []struct{ Path, Message string }
	}
	if err := json.Unmarshal([]byte(errs), &out); err != nil {
		t.Fatalf("stderr is not JSON: %v\n%s", err, errs)
	}
	if out.ExitCode != 2 || len(out.Problems) != 3 {
		t.Fatalf("got %+v", out)
	}
}

func TestTopologySave(t *testing.T) {
	p := filepath.Join(t.TempDir(), "saved.yaml")
	code, _, errs := heatsible(t, "topology", "--request", filepath.Join(td, "requests", "valid.json"), "--topology", filepath.Join(td, "topology", "k8s-a.yaml"), "--save", p)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	code, out, errs := heatsible(t, "inventory", "--request", filepath.Join(td, "requests", "valid.json"), "--topology", p)
	if code != 0 || !strings.Contains(out, "storage-server") {
		t.Fatalf("inventory from saved topology: code %d\n%s\n%s", code, out, errs)
	}
}

// TestTerminateEndJSON: an operation that runs no playbook still prints its
// -o json document (hooks parse it), and removes the kubespray inventory.
func TestTerminateEndJSON(t *testing.T) {
	data, err := os.ReadFile("../../testdata/requests/kubespray_lb.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inv := filepath.Join(dir, "kubespray", "inventory", "k8s")
	req := strings.NewReplacer("/home/ansible/kubespray/inventory/mycluster", inv, "/home/ansible/kubespray", filepath.Join(dir, "kubespray")).Replace(string(data))
	reqFile := filepath.Join(dir, "request.json")
	if err := os.WriteFile(reqFile, []byte(req), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(inv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inv, "hosts.yaml"), []byte("all: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := heatsible(t, "-o", "json", "run", "terminate-end", "--local", "--request", reqFile, "--package", "../../testdata/package",
		"--topology", "../../testdata/topology/k8s-lb.yaml", "--known-hosts", kh)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc struct {
		OK        bool   `json:"ok"`
		Operation string `json:"operation"`
		ExitCode  int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || !doc.OK || doc.Operation != "terminate-end" {
		t.Fatalf("-o json document %+v (%v):\n%s", doc, err, stdout)
	}
	if _, err := os.Stat(filepath.Join(inv, "hosts.yaml")); !os.IsNotExist(err) {
		t.Errorf("the kubespray inventory is still there: %v", err)
	}
}
