package lcm

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/internal/topology"
)

func fixture(t testing.TB, name string) (*params.Request, *topology.Topology) {
	t.Helper()
	req := loadRequest(t, name)
	topo, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return req, topo
}

// loadRequest reads and validates testdata/requests/NAME.json against the
// test package.
func loadRequest(t testing.TB, name string) *params.Request {
	t.Helper()
	req, err := params.Load("../../testdata/requests/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(params.Options{PackageDir: "../../testdata/package", RequirePackage: true}); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestPrepareKeepsSecretsInTheSecretsFile(t *testing.T) {
	req, topo := fixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"test-password-m", "test-password-w", "test-password-s", "password1", "password2"}
	public := map[string][]byte{"inventory": f.Inventory, "playbook": f.Playbook}
	for g, b := range f.GroupVars {
		public["group_vars/"+g] = b
	}
	for n, b := range f.Manifests {
		public["manifests/"+n] = b
	}
	for name, b := range public {
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", name, s)
			}
		}
	}
	for _, s := range secrets {
		if !strings.Contains(string(f.Secrets), s) {
			t.Errorf("the secrets file lacks %q", s)
		}
		found := false
		for _, v := range f.SecretValues {
			found = found || strings.Contains(v, s)
		}
		if !found {
			t.Errorf("SecretValues does not mask %q", s)
		}
	}
	var all struct {
		CinderVolumes []map[string]string `yaml:"cinder_volumes"`
		NFSExports    []map[string]string `yaml:"nfs_exports"`
		PVManifests   []map[string]string `yaml:"pv_manifests"`
		Impl          string              `yaml:"nfs_server_impl"`
	}
	if err := yaml.Unmarshal(f.GroupVars["all"], &all); err != nil {
		t.Fatal(err)
	}
	if len(all.CinderVolumes) != 1 || all.CinderVolumes[0]["id"] != "5b1d3a2c-0000-4000-8000-000000000001" || all.CinderVolumes[0]["device"] != "/dev/vdb" || all.CinderVolumes[0]["mount_to"] != "/volume" {
		t.Errorf("cinder_volumes = %v", all.CinderVolumes)
	}
	if len(all.NFSExports) != 2 || all.NFSExports[1]["dir"] != "/volume/nfs/pv2" || all.NFSExports[1]["to"] != "10.10.0.0/24" {
		t.Errorf("nfs_exports = %v", all.NFSExports)
	}
	if all.Impl != "kernel" {
		t.Errorf("nfs_server_impl = %q, want the default kernel", all.Impl)
	}
	if len(all.PVManifests) != 2 || all.PVManifests[0]["src"] != "{{ playbook_dir }}/manifests/nfs-pv1.yaml" {
		t.Errorf("pv_manifests = %v", all.PVManifests)
	}
	if !strings.Contains(string(f.Manifests["nfs-pv1.yaml"]), "server: 10.10.0.45") {
		t.Errorf("manifest server not set:\n%s", f.Manifests["nfs-pv1.yaml"])
	}
	var kcp map[string]string
	yaml.Unmarshal(f.GroupVars["kube_control_plane"], &kcp)
	if kcp["ansible_password"] != "{{ heatsible_secrets.master_password }}" {
		t.Errorf("kube_control_plane group vars = %v", kcp)
	}
}

func TestContract(t *testing.T) {
	req, _ := fixture(t, "valid")
	c := Contract(req)
	if c.MasterAspect != "master_instance" || c.WorkerSSHCP != "workerNode_FloatingIP" || c.WorkerNICCP != "workerNode_CP2" ||
		c.StorageNICCP != "storage_server_CP" || len(c.Volumes) != 1 || strings.Join(c.ExtraCPs, ",") != "masterNode_CP1,storage_server_CP" {
		t.Errorf("contract = %+v", c)
	}
}

func TestLockRefusesSecondHolder(t *testing.T) {
	t.Setenv("HEATSIBLE_STATE_DIR", t.TempDir())
	l, err := state.Acquire("k8s-a", "instantiate-end", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = state.Acquire("k8s-a", "heal-end", false)
	if err == nil || !strings.Contains(err.Error(), "instantiate-end (pid") {
		t.Fatalf("second Acquire: %v", err)
	}
	l.Release()
	l2, err := state.Acquire("k8s-a", "heal-end", false)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

// storage_server.volume_identification "device_name" is the explicit opt-in
// that lets cinder_volume trust Heat's device name; without it the role
// variable is absent (the role's default: identify volumes by id only).
func TestVolumeIdentificationReachesTheRole(t *testing.T) {
	for name, want := range map[string]bool{"valid": false, "valid_volume_identification_device_name": true} {
		req, topo := fixture(t, name)
		f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
		if err != nil {
			t.Fatal(err)
		}
		var all map[string]any
		if err := yaml.Unmarshal(f.GroupVars["all"], &all); err != nil {
			t.Fatal(err)
		}
		got, set := all["cinder_volume_trust_device_name"]
		if set != want || (want && got != true) {
			t.Errorf("%s: cinder_volume_trust_device_name = %v (set %v), want set=%v", name, got, set, want)
		}
	}
}
