package ansible

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

const testSecret = "Pa55-w0rd-s3cret!"

func minimalSpec(t *testing.T) BundleSpec {
	t.Helper()
	return BundleSpec{
		Cluster:   "c1",
		Operation: "heal_end",
		BaseDir:   t.TempDir(),
		Inventory: []byte("all:\n  hosts:\n    node-a: {}\n"),
		Playbook:  []byte("- hosts: all\n  gather_facts: false\n  tasks: []\n"),
		Roles: fstest.MapFS{
			"probe/tasks/main.yml":    {Data: []byte("---\n[]\n")},
			"probe/defaults/main.yml": {Data: []byte("---\n{}\n")},
		},
		Collections: map[string]fs.FS{"heatsible.nfv": fstest.MapFS{
			"galaxy.yml":               {Data: []byte("namespace: heatsible\nname: nfv\n")},
			"plugins/action/refuse.py": {Data: []byte("# action\n")},
		}},
		GroupVars: map[string][]byte{
			"all":                []byte("probe_dir: /tmp/x\n"),
			"kube_control_plane": []byte("ansible_password: \"{{ heatsible_secrets.master_password }}\"\n"),
		},
		Secrets:    []byte("heatsible_secrets:\n  master_password: " + testSecret + "\n  port: 22\n"),
		Files:      map[string][]byte{"manifests/pv1.yaml": []byte("kind: PersistentVolume\n")},
		KnownHosts: []byte("10.0.0.5 ssh-ed25519 AAAA\n"),
	}
}

func TestNewBundleLayout(t *testing.T) {
	spec := minimalSpec(t)
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(b.Dir), "heatsible-c1-heal_end-") || filepath.Dir(b.Dir) != spec.BaseDir {
		t.Errorf("bundle dir %s: want %s/heatsible-c1-heal_end-*", b.Dir, spec.BaseDir)
	}
	for rel, want := range map[string]os.FileMode{
		".":                            os.ModeDir | 0o700,
		SecretsFile:                    0o600,
		MarkerFile:                     0o600,
		"inventory/hosts.yml":          0o644,
		"inventory/group_vars/all.yml": 0o644,
		"inventory/group_vars/kube_control_plane.yml": 0o644,
		PlaybookFile:                 0o644,
		"roles/probe/tasks/main.yml": 0o644,
		"collections/ansible_collections/heatsible/nfv/galaxy.yml":               0o644,
		"collections/ansible_collections/heatsible/nfv/plugins/action/refuse.py": 0o644,
		"manifests/pv1.yaml": 0o644,
		KnownHostsFile:       0o644,
		ConfigFile:           0o644,
		TmpDir:               os.ModeDir | 0o700,
	} {
		st, err := os.Stat(filepath.Join(b.Dir, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", rel, st.Mode(), want)
		}
	}
	inv, _ := os.ReadFile(filepath.Join(b.Dir, "inventory/hosts.yml"))
	if strings.Contains(string(inv), testSecret) {
		t.Error("secret in inventory")
	}
	cfg := string(b.Config("/stage"))
	for _, want := range []string{
		"[defaults]\n",
		"forks = 50\n",
		"timeout = 30\n",
		"host_key_checking = True\n",
		"gathering = smart\n",
		"stdout_callback = heatsible_jsonl\n",
		"callback_plugins = /stage/callback_plugins\n",
		"roles_path = /stage/roles\n",
		// the bundle's collections first, then Ansible's default places
		"collections_path = /stage/collections:~/.ansible/collections:/usr/share/ansible/collections\n",
		"[ssh_connection]\n",
		"pipelining = True\n",
		`ssh_args = -o UserKnownHostsFile="/stage/known_hosts" -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o ControlMaster=auto -o ControlPersist=60s` + "\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("ansible.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bundle still there after Close: %v", err)
	}
}

func TestNewBundleConfigOverrides(t *testing.T) {
	spec := minimalSpec(t)
	spec.Forks = 7
	spec.Config = map[string]map[string]string{
		"defaults":  {"forks": "9", "force_valid_group_names": "ignore"},
		"inventory": {"ignore_patterns": "artifacts, credentials"},
	}
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg, _ := os.ReadFile(filepath.Join(b.Dir, ConfigFile))
	for _, want := range []string{"forks = 9\n", "force_valid_group_names = ignore\n", "[inventory]\nignore_patterns = artifacts, credentials\n", "roles_path = " + b.Dir + "/roles\n"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("ansible.cfg lacks %q:\n%s", want, cfg)
		}
	}
}

func TestNewBundleRejects(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*BundleSpec)
		want   string
	}{
		{"empty inventory", func(s *BundleSpec) { s.Inventory = nil }, "empty inventory"},
		{"inventory name with a path", func(s *BundleSpec) { s.InventoryName = "../hosts.yml" }, "plain file name"},
		{"inventory extension", func(s *BundleSpec) { s.InventoryName = "hosts.txt" }, "want a .yml"},
		{"bad group name", func(s *BundleSpec) { s.GroupVars = map[string][]byte{"../x": nil} }, "invalid group name"},
		{"extra file escaping", func(s *BundleSpec) { s.Files = map[string][]byte{"../evil": nil} }, "extra file"},
		{"extra file in the collections", func(s *BundleSpec) {
			s.Files = map[string][]byte{"collections/ansible_collections/heatsible/nfv/plugins/action/refuse.py": nil}
		}, "extra file"},
		{"collection name", func(s *BundleSpec) { s.Collections = map[string]fs.FS{"../nfv": fstest.MapFS{}} }, "want namespace.name"},
		{"collection name without namespace", func(s *BundleSpec) { s.Collections = map[string]fs.FS{"nfv": fstest.MapFS{}} }, "want namespace.name"},
		{"extra file over secrets", func(s *BundleSpec) { s.Files = map[string][]byte{SecretsFile: nil} }, "extra file"},
		{"broken secrets yaml", func(s *BundleSpec) { s.Secrets = []byte("a: [") }, "parsing secrets YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := minimalSpec(t)
			tt.modify(&spec)
			b, err := NewBundle(spec)
			if err == nil {
				b.Close()
				t.Fatalf("NewBundle succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(spec.BaseDir); len(entries) != 0 {
				t.Errorf("failed NewBundle left %d entries behind", len(entries))
			}
		})
	}
}

// TestBundleMasking: the bundle masks every form (internal/redact) of the
// secrets file's strings and of SecretValues; keys, numbers and booleans
// stay; MaskedSecrets masks every value.
func TestBundleMasking(t *testing.T) {
	spec := minimalSpec(t)
	spec.Secrets = []byte("heatsible_secrets:\n  a: long&secret<1>\n  b: [\"long-secret-2\"]\n  c: !unsafe \"long-{{ secret }}-3\"\n  port: 22\n  on: true\n")
	spec.SecretValues = []string{"x9"}
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tests := []struct{ in, want string }{
		{"pw=long&secret<1>.", "pw=********."},
		{`{"pw":"long\u0026secret\u003c1\u003e"}`, `{"pw":"********"}`}, // json.Marshal's form
		{"long-secret-2 and long&secret<1>", "******** and ********"},
		{"unsafe long-{{ secret }}-3.", "unsafe ********."}, // heatsible writes its secrets !unsafe
		{"port 22 stays, true stays", "port 22 stays, true stays"},
		{"explicit x9 value", "explicit ******** value"},
		{"heatsible_secrets keys stay", "heatsible_secrets keys stay"},
	}
	for _, tt := range tests {
		if got := b.Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	masked, err := b.MaskedSecrets()
	if err != nil {
		t.Fatal(err)
	}
	want := "heatsible_secrets:\n    a: '********'\n    b: ['********']\n    c: '********'\n    port: '********'\n    on: '********'\n"
	if string(masked) != want {
		t.Errorf("MaskedSecrets =\n%s\nwant\n%s", masked, want)
	}
}

func TestCommand(t *testing.T) {
	spec := minimalSpec(t)
	b, err := NewBundle(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Every run pins host key checking in extra vars (pinnedVars), merged
	// with the run's own.
	pins := func(more map[string]any) string {
		m := pinnedVars("/s")
		for k, v := range more {
			m[k] = v
		}
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return "--extra-vars=" + string(j)
	}
	base := []string{"ansible-playbook", pins(nil), "--extra-vars=@/s/secrets.yml", "--inventory=/s/inventory"}
	tests := []struct {
		name    string
		opts    PlaybookOptions
		want    []string
		wantErr string
	}{
		{name: "default", want: append(slices.Clone(base), "/s/playbook.yml")},
		{
			name: "check diff limit tags",
			opts: PlaybookOptions{Check: true, Diff: true, Limit: "worker-1,worker-2", Tags: []string{"nfs", "pv"}, SkipTags: []string{"slow"}},
			want: []string{"ansible-playbook", "--check", "--diff", pins(nil), "--extra-vars=@/s/secrets.yml", "--inventory=/s/inventory", "--limit=worker-1,worker-2", "--skip-tags=slow", "--tags=nfs,pv", "/s/playbook.yml"},
		},
		{
			name: "kubespray playbooks, extra vars, verbosity",
			opts: PlaybookOptions{Playbooks: []string{"remove-node.yml"}, ExtraVars: map[string]any{"node": "worker-3", "skip_confirmation": true}, Verbosity: 2, Binary: "/opt/venv/bin/ansible-playbook"},
			want: []string{"/opt/venv/bin/ansible-playbook", pins(map[string]any{"node": "worker-3", "skip_confirmation": true}), "--extra-vars=@/s/secrets.yml", "--inventory=/s/inventory", "-vv", "remove-node.yml"},
		},
		{name: "secret in extra vars", opts: PlaybookOptions{ExtraVars: map[string]any{"pw": testSecret}}, wantErr: "secret value would appear on the command line"},
		{name: "secret in limit", opts: PlaybookOptions{Limit: testSecret}, wantErr: "secret value"},
		{name: "jinja in extra vars", opts: PlaybookOptions{ExtraVars: map[string]any{"node": "w{{ lookup('pipe', 'id') }}"}}, wantErr: "Jinja delimiter"},
		{name: "jinja comment in extra vars", opts: PlaybookOptions{ExtraVars: map[string]any{"node": "w{#"}}, wantErr: "Jinja delimiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Command(b, "/s", tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Command = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Command =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}

	t.Run("bundle without playbook", func(t *testing.T) {
		s := minimalSpec(t)
		s.Playbook = nil
		nb, err := NewBundle(s)
		if err != nil {
			t.Fatal(err)
		}
		defer nb.Close()
		if _, err := Command(nb, "/s", PlaybookOptions{}); err == nil {
			t.Error("Command without any playbook succeeded")
		}
		if _, err := Command(nb, "/s", PlaybookOptions{Playbooks: []string{"cluster.yml"}}); err != nil {
			t.Error(err)
		}
	})
}
