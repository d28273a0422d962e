package lcm

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestKubeconfigVar: master_node.kubeconfig reaches the kubeconfig role as
// kubectl_kubeconfig (group_vars/all); without it the variable is not set
// and the role searches.
func TestKubeconfigVar(t *testing.T) {
	for _, tc := range []struct{ request, want string }{
		{"valid", ""},
		{"valid_kubeconfig", "/etc/kubernetes/admin.conf"},
	} {
		req, topo := fixture(t, tc.request)
		for _, op := range []Op{{Name: OpInstantiateEnd}, {Name: OpHealStart, Target: TargetStorageServer}} {
			f, err := RenderOp(req, topo, "../../testdata/package", op, "test")
			if err != nil {
				t.Fatal(err)
			}
			var all struct {
				Kubeconfig *string `yaml:"kubectl_kubeconfig"`
			}
			if err := yaml.Unmarshal(f.GroupVars["all"], &all); err != nil {
				t.Fatal(err)
			}
			got := ""
			if all.Kubeconfig != nil {
				got = *all.Kubeconfig
			}
			if got != tc.want || (tc.want == "" && all.Kubeconfig != nil) {
				t.Errorf("%s, %s: kubectl_kubeconfig = %v, want %q", tc.request, op.Name, all.Kubeconfig, tc.want)
			}
		}
	}
}
