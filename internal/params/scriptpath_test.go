package params

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptPath: k8s_cluster_installation_param.script_path (Tacker's
// Kubernetes installation script) is refused for a whole run
// (Options.WholeRun: validate without --tags) unless kubespray installs the
// cluster, and otherwise noted; an empty one is neither.
func TestScriptPath(t *testing.T) {
	const path = Prefix + ".script_path"
	tests := []struct {
		name      string
		script    string
		ansible   *Ansible
		refused   bool   // for a whole run
		note      string // in Notes, for a run that is not refused ("" none)
		wholeNote bool   // the note also in a whole run (not refused)
	}{
		{"no script_path", "", nil, false, "", false},
		{"the PV guide's, no ansible", "Scripts/install_k8s_cluster.sh", nil, true, "takes the cluster as installed", false},
		{"ansible without kubespray", "Scripts/install_k8s_cluster.sh", &Ansible{IPAddress: "10.10.0.5", Username: "a", Password: "p"}, true, "takes the cluster as installed", false},
		{"kubespray installs", "Scripts/install_k8s_cluster.sh", &Ansible{IPAddress: "10.10.0.5", Username: "a", Password: "p",
			KubesprayRootPath: "/home/ansible/kubespray", TransferringInventoryPath: "inventory/mycluster/hosts.yaml"}, false, "kubespray (ansible.kubespray_root_path) installs the cluster", true},
		{"kubespray, empty script_path (the kubespray spec)", "", &Ansible{IPAddress: "10.10.0.5", Username: "a", Password: "p",
			KubesprayRootPath: "/home/ansible/kubespray", TransferringInventoryPath: "inventory/mycluster/hosts.yaml"}, false, "", false},
		{"a hostile value is quoted", "Scripts/x.sh\n\x1b[31mok", nil, true, `"Scripts/x.sh\n\x1b[31mok"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Cluster: Cluster{ScriptPath: tt.script, Ansible: tt.ansible,
				MasterNode: &Node{AspectID: "master_instance", SSHCPName: "m", NICCPName: "m", Username: "u", Password: "p"},
				WorkerNode: &Node{AspectID: "worker_instance", SSHCPName: "w", NICCPName: "w", Username: "u", Password: "p"}}}
			prob := req.ScriptPathProblem()
			if (prob != nil) != tt.refused {
				t.Fatalf("ScriptPathProblem = %v, want refused %v", prob, tt.refused)
			}
			whole := req.Validate(Options{WholeRun: true})
			if err := req.Validate(Options{}); err != nil {
				t.Fatalf("Validate without WholeRun: %v", err)
			}
			notes := strings.Join(req.Notes(), "\n")
			if tt.note == "" {
				if strings.Contains(notes, "script_path") {
					t.Errorf("Notes mention script_path:\n%s", notes)
				}
			} else if !strings.Contains(notes, path+": heatsible does not run ") || !strings.Contains(notes, tt.note) {
				t.Errorf("Notes lack %q:\n%s", tt.note, notes)
			}
			if !tt.refused {
				if whole != nil {
					t.Errorf("Validate(WholeRun) = %v, want valid", whole)
				}
				return
			}
			ps, ok := whole.(Problems)
			if !ok || len(ps) != 1 || ps[0].Path != path {
				t.Fatalf("Validate(WholeRun) = %v, want one problem at %s", whole, path)
			}
			for _, want := range []string{"which heatsible does not run", "nothing would install Kubernetes", "the kubeadm variant", "kubespray_root_path", "remove script_path"} {
				if !strings.Contains(ps[0].Msg, want) {
					t.Errorf("message lacks %q: %s", want, ps[0].Msg)
				}
			}
			if strings.ContainsAny(ps[0].Msg, "\n\x1b") {
				t.Errorf("message holds the raw value: %q", ps[0].Msg)
			}
		})
	}
}

// TestScriptPathWithOtherProblems: a whole run's validate reports
// script_path with every other problem at once.
func TestScriptPathWithOtherProblems(t *testing.T) {
	req := &Request{Cluster: Cluster{ScriptPath: "Scripts/install_k8s_cluster.sh"}}
	err := req.Validate(Options{WholeRun: true})
	ps, _ := err.(Problems)
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
	}
	got := strings.Join(paths, " ")
	if !strings.Contains(got, Prefix+".master_node") || !strings.HasSuffix(got, Prefix+".script_path") {
		t.Errorf("problems at %s; want master_node's and script_path's", got)
	}
}

// TestSeedBodiesWholeRun: what heatsible validate (a whole run) makes of
// the seeds' concrete bodies: the PV documents' bodies are refused for
// their script_path alone; the kubespray spec's (script_path "") is valid.
func TestSeedBodiesWholeRun(t *testing.T) {
	for body, refused := range map[string]bool{"pv-spec": true, "pv-usage-guide": true, "kubespray-spec": false} {
		t.Run(body, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(testdata, "seeds", body+".concrete.json"))
			if err != nil {
				t.Fatal(err)
			}
			req, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			err = req.Validate(Options{PackageDir: filepath.Join(testdata, "seeds", "package"), RequirePackage: true, WholeRun: true})
			if !refused {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			ps, _ := err.(Problems)
			if len(ps) != 1 || ps[0].Path != Prefix+".script_path" || !strings.HasPrefix(ps[0].Msg, `"Scripts/install_k8s_cluster.sh" is Tacker's Kubernetes installation script`) {
				t.Errorf("got %v, want the one refusal of script_path", err)
			}
		})
	}
}
