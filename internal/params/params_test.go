package params

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const testdata = "../../testdata"

// TestRequestsGolden parses and validates every request in
// testdata/requests and compares the full outcome (problems and warnings;
// notes when valid) with its golden file.
func TestRequestsGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdata, "requests", "*.json"))
	if err != nil || len(files) < 30 {
		t.Fatalf("want at least 30 request fixtures, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			got := outcome(f)
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden file (run go test -run TestRequestsGolden -update): %v", err)
			}
			if got != string(want) {
				t.Errorf("outcome differs from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
			valid := strings.HasPrefix(name, "valid") || !strings.Contains(got, "problem:")
			if strings.HasPrefix(name, "valid") && !valid {
				t.Errorf("%s must be valid", name)
			}
		})
	}
}

func outcome(path string) string {
	var b strings.Builder
	req, err := Load(path)
	if err == nil {
		err = req.Validate(Options{PackageDir: filepath.Join(testdata, "package")})
	}
	if req != nil {
		for _, w := range req.Warnings {
			b.WriteString("warning: " + w + "\n")
		}
	}
	if err != nil {
		for _, p := range err.(Problems) {
			b.WriteString("problem: " + p.String() + "\n")
		}
	} else {
		for _, n := range req.Notes() {
			b.WriteString("note: " + n + "\n")
		}
		b.WriteString("valid\n")
	}
	return b.String()
}

func TestBadRequestsNamePaths(t *testing.T) {
	// Every invalid fixture (anything not named valid* or the known-good
	// variants) must yield a problem that names a JSON path under Prefix or
	// the request itself.
	good := map[string]bool{"ansible_kubespray": true, "external_lb": true, "kubespray_lb": true, "csi_manifest": true, "unknown_fields": true}
	files, _ := filepath.Glob(filepath.Join(testdata, "requests", "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasPrefix(name, "valid") || good[name] {
			if o := outcome(f); !strings.HasSuffix(o, "\nvalid\n") && o != "valid\n" || strings.Contains(o, "problem:") {
				t.Errorf("%s: want valid, got\n%s", name, o)
			}
			continue
		}
		req, err := Load(f)
		if err == nil {
			err = req.Validate(Options{PackageDir: filepath.Join(testdata, "package")})
		}
		if !IsInvalid(err) {
			t.Errorf("%s: want a Problems error, got %v", name, err)
			continue
		}
		for _, p := range err.(Problems) {
			if !strings.HasPrefix(p.Path, Prefix) && !strings.HasPrefix(p.Path, "(request)") && p.Path != "additionalParams" && p.Path != "--request" {
				t.Errorf("%s: problem without a field path: %v", name, p)
			}
		}
	}
}

func TestPasswordsNeverEchoed(t *testing.T) {
	req, err := Parse([]byte(`{"k8s_cluster_installation_param":{"master_node":{"aspect_id":"m","ssh_cp_name":"a","nic_cp_name":"a","username":"u","password":"sekret\nline"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = req.Validate(Options{})
	if err == nil || strings.Contains(err.Error(), "sekret") {
		t.Fatalf("want an error that does not echo the password, got %v", err)
	}
}

func TestValidateTopology(t *testing.T) {
	req, err := Load(filepath.Join(testdata, "requests", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	good := &topology.Topology{
		Cluster: "c",
		Nodes: []topology.Node{
			{Name: "m", Role: topology.RoleMaster, SSHAddress: "10.0.0.1", Address: "10.0.0.1"},
			{Name: "s", Role: topology.RoleStorage, SSHAddress: "10.0.0.2", Address: "10.0.0.2"},
		},
		CPs:     map[string]string{"storage_server_CP": "10.0.0.2", "masterNode_CP1": "10.0.0.1"},
		Volumes: []topology.Volume{{Resource: "storage_server_volume", ID: "v", Device: "/dev/vdb"}},
	}
	if err := req.ValidateTopology(good); err != nil {
		t.Fatalf("good topology: %v", err)
	}
	tests := []struct {
		name string
		edit func(*topology.Topology)
		want []string
	}{
		{"no storage CP", func(t *topology.Topology) { delete(t.CPs, "storage_server_CP") }, []string{"pv_registration_params[0].nfs_server_cp", "pv_registration_params[1].nfs_server_cp"}},
		{"no volume", func(t *topology.Topology) { t.Volumes = nil }, []string{"cinder_volume_setup_params[0].volume_resource_id"}},
		{"no storage node", func(t *topology.Topology) { t.Nodes = t.Nodes[:1] }, []string{Prefix + ".storage_server:"}},
		{"no master", func(t *topology.Topology) { t.Nodes = t.Nodes[1:] }, []string{"master_node.aspect_id"}},
		{"no cluster CP", func(t *topology.Topology) { delete(t.CPs, "masterNode_CP1") }, []string{"master_node.cluster_cp_name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := *good
			topo.CPs = map[string]string{}
			for k, v := range good.CPs {
				topo.CPs[k] = v
			}
			tt.edit(&topo)
			err := req.ValidateTopology(&topo)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestPasswordsAnyPrintable: a password is never refused for its printable
// characters (Jinja, quotes, shell, non-ASCII, any length up to the limit);
// NUL and line breaks are, naming the field without echoing the value.
func TestPasswordsAnyPrintable(t *testing.T) {
	fields := map[string]func(*Request) *string{
		"master_node.password":           func(r *Request) *string { return &r.Cluster.MasterNode.Password },
		"worker_node.password":           func(r *Request) *string { return &r.Cluster.WorkerNode.Password },
		"storage_server.password":        func(r *Request) *string { return &r.Cluster.StorageServer.Password },
		"ansible.password":               func(r *Request) *string { return &r.Cluster.Ansible.Password },
		"external_lb_param.ssh_password": func(r *Request) *string { return &r.Cluster.ExternalLBParam.SSHPassword },
	}
	good := []string{
		"ab{{ 7*7 }}cd {% raw %} {# ' \" \\ $HOME `id` &<> % x;y|z(){}[]*?!~^=+,.:@/-_" + strings.Repeat("Zz9", 10),
		"{{ lookup('pipe', 'touch /tmp/PWNED') }}",
		"{#", "{% endraw %}", " leading and trailing spaces ", "-o ProxyCommand=x", "пароль 密码 🔑", "'", `"`, `\`,
		strings.Repeat("x", 1024),
	}
	bad := map[string]string{"NUL": "a\x00b", "newline": "a\nb", "carriage return": "a\rb"}
	for field, get := range fields {
		for _, pw := range good {
			req, err := Load(filepath.Join(testdata, "requests", "kubespray_lb.json"))
			if err != nil {
				t.Fatal(err)
			}
			*get(req) = pw
			if err := req.Validate(Options{PackageDir: filepath.Join(testdata, "package")}); err != nil {
				t.Errorf("%s %q refused: %v", field, pw, err)
			}
		}
		for name, pw := range bad {
			req, err := Load(filepath.Join(testdata, "requests", "kubespray_lb.json"))
			if err != nil {
				t.Fatal(err)
			}
			*get(req) = pw
			err = req.Validate(Options{PackageDir: filepath.Join(testdata, "package")})
			if err == nil || !strings.Contains(err.Error(), Prefix+"."+field+":") || strings.Contains(err.Error(), pw) {
				t.Errorf("%s with a %s: %v; want it refused, naming the field and not the value", field, name, err)
			}
		}
	}
}

// TestGaneshaExportID: the Export_Id roles/nfs_server derives from a path
// (its filter nfs_server_table; roles/nfs_server/tests asserts the same
// numbers), so that the clash check here is about the ids ganesha gets.
func TestGaneshaExportID(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want int
	}{
		{"/volume/nfs/pv1", 11071},
		{"/volume/nfs/pv103", 43213},
		{"/volume/nfs/pv148", 43213},
	} {
		if got := ganeshaExportID(tc.dir); got != tc.want {
			t.Errorf("ganeshaExportID(%q) = %d, want %d", tc.dir, got, tc.want)
		}
	}
}
