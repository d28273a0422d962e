package manifest

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestPrepareServerAddresses(t *testing.T) {
	src, err := os.ReadFile("../../testdata/package/Files/kubernetes/nfs-pv1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"10.231.0.11", "fd00:10::45", "::1", "nfs.example.com", "1e3", "true"} {
		t.Run(server, func(t *testing.T) {
			pv, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			out, err := pv.Prepare(server)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Metadata struct {
					Name   string            `yaml:"name"`
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec struct {
					NFS struct {
						Server any    `yaml:"server"`
						Path   string `yaml:"path"`
					} `yaml:"nfs"`
				} `yaml:"spec"`
			}
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, out)
			}
			if doc.Spec.NFS.Server != server {
				t.Errorf("server = %#v, want the string %q\n%s", doc.Spec.NFS.Server, server, out)
			}
			if doc.Spec.NFS.Path != "/volume/nfs/pv1" || doc.Metadata.Name != "nfs-pv1" {
				t.Errorf("other fields changed:\n%s", out)
			}
			if doc.Metadata.Labels[ManagedByLabel] != ManagedByValue {
				t.Errorf("label missing:\n%s", out)
			}
			// Prepare is idempotent: preparing the output again changes nothing.
			pv2, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := pv2.Prepare(server)
			if string(out2) != string(out) {
				t.Errorf("not idempotent:\n%s\n---\n%s", out, out2)
			}
		})
	}
}

func TestCSIUnchangedButLabelled(t *testing.T) {
	src, err := os.ReadFile("../../testdata/package/Files/kubernetes/manila-csi-pv.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pv, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Source != SourceCSI {
		t.Fatalf("source = %s", pv.Source)
	}
	out, err := pv.Prepare("10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "10.0.0.1") || !strings.Contains(string(out), "nfs.manila.csi.openstack.org") {
		t.Errorf("CSI manifest edited:\n%s", out)
	}
	if !strings.Contains(string(out), "app.kubernetes.io/managed-by: heatsible") {
		t.Errorf("label missing:\n%s", out)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"empty", "", "is empty"},
		{"two docs", "apiVersion: v1\nkind: PersistentVolume\n---\napiVersion: v1\nkind: PersistentVolume\n", "2 YAML documents"},
		{"list", "- a\n- b\n", "not a YAML mapping"},
		{"pvc", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: a}\n", "kind \"PersistentVolumeClaim\""},
		{"no name", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {}\nspec: {nfs: {path: /a}}\n", "no metadata.name"},
		{"bad name", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: A_B}\nspec: {nfs: {path: /a}}\n", "not a valid Kubernetes name"},
		{"both", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: a}\nspec: {nfs: {path: /a}, csi: {driver: x}}\n", "both spec.nfs and spec.csi"},
		{"relative path", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: a}\nspec: {nfs: {path: a}}\n", "not an absolute path"},
		{"hostPath", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: a}\nspec: {hostPath: {path: /a}}\n", "neither spec.nfs nor spec.csi"},
		{"bad yaml", "apiVersion: [v1\n", "not valid YAML"},
		{"huge", strings.Repeat("#", MaxSize+1), "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
