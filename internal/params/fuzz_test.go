package params

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseValidate feeds arbitrary bytes to Parse and Validate (with the
// test package directory, so manifest paths are resolved for real).
// Invariants:
//   - nothing panics;
//   - the outcome does not depend on the passwords' content: validating the
//     same request with every password byte replaced (length and control
//     characters kept) gives exactly the same problems, so no message can
//     echo a password;
//   - whatever Validate accepts is safe to write into /etc/exports, fstab,
//     ganesha.conf and command lines: every path on a VM is absolute, clean,
//     ASCII and free of shell and exports metacharacters; export_to and
//     export_options hold no whitespace, parentheses, '*' or control
//     characters; package paths stay inside the package.
func FuzzParseValidate(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testdata, "requests", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed requests: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	pkg := filepath.Join(testdata, "package")
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := Parse(data)
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("Parse failed without a Problems error: %v", err)
			}
			return
		}
		opts := Options{PackageDir: pkg, RequirePackage: true}
		verr := req.Validate(opts)
		if verr != nil && !IsInvalid(verr) {
			t.Fatalf("Validate failed without a Problems error: %v", verr)
		}

		masked, err := Parse(data)
		if err != nil {
			t.Fatalf("second Parse of the same bytes failed: %v", err)
		}
		maskPasswords(&masked.Cluster)
		merr := masked.Validate(opts)
		if errString(verr) != errString(merr) {
			t.Fatalf("the outcome depends on a password's content:\nreal:   %v\nmasked: %v", verr, merr)
		}
		if verr != nil {
			return
		}
		checkAccepted(t, &req.Cluster, pkg)
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// maskPasswords replaces every byte of every password that is not a control
// character with 'Z': same length, same control characters, other content.
func maskPasswords(c *Cluster) {
	mask := func(s *string) {
		b := []byte(*s)
		for i, x := range b {
			if x >= 0x20 && x != 0x7f {
				b[i] = 'Z'
			}
		}
		*s = string(b)
	}
	for _, n := range []*Node{c.MasterNode, c.WorkerNode} {
		if n != nil {
			mask(&n.Password)
		}
	}
	if c.StorageServer != nil {
		mask(&c.StorageServer.Password)
	}
	if c.Ansible != nil {
		mask(&c.Ansible.Password)
	}
	if c.ExternalLBParam != nil {
		mask(&c.ExternalLBParam.SSHPassword)
	}
}

// vmPathBytes is every byte a path on a VM may hold once validated.
const vmPathBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./@+-"

// forbidden must never reach an exports line, fstab or a command line.
const forbidden = ";\n\r\t \x00()*'\"`$\\|&<>#,=?[]{}!~"

func checkAccepted(t *testing.T, c *Cluster, pkg string) {
	t.Helper()
	vmPath := func(field, v string, required bool) {
		if v == "" {
			if required {
				t.Fatalf("%s: accepted while empty", field)
			}
			return
		}
		switch {
		case !strings.HasPrefix(v, "/"):
			t.Fatalf("%s: accepted %q, which is not absolute", field, v)
		case path.Clean(v) != v:
			t.Fatalf("%s: accepted %q, which is not clean", field, v)
		case strings.Trim(v, vmPathBytes) != "":
			t.Fatalf("%s: accepted %q, which holds a byte outside %s", field, v, vmPathBytes)
		case strings.ContainsAny(v, forbidden):
			t.Fatalf("%s: accepted %q, which holds a metacharacter", field, v)
		}
		for _, part := range strings.Split(v, "/") {
			if part == ".." {
				t.Fatalf("%s: accepted %q, which holds '..'", field, v)
			}
		}
	}
	// noSpace: no whitespace or control character, valid UTF-8.
	noSpace := func(field, v string) {
		if !utf8.ValidString(v) {
			t.Fatalf("%s: accepted %q, which is not UTF-8", field, v)
		}
		for _, r := range v {
			if r <= 0x20 || r == 0x7f || unicode.IsSpace(r) {
				t.Fatalf("%s: accepted %q, which holds whitespace or a control character", field, v)
			}
		}
	}
	// noMeta: noSpace, and nothing a shell or an exports line reads.
	noMeta := func(field, v string) {
		noSpace(field, v)
		if strings.ContainsAny(v, forbidden) {
			t.Fatalf("%s: accepted %q, which holds a metacharacter", field, v)
		}
	}
	if s := c.StorageServer; s != nil {
		if len(s.CinderVolumeSetupParams) == 0 || len(s.NFSServerSetupParams) == 0 {
			t.Fatalf("storage_server accepted with an empty list")
		}
		for _, v := range s.CinderVolumeSetupParams {
			vmPath("mount_to", v.MountTo, true)
		}
		dirs := map[string]bool{}
		for _, e := range s.NFSServerSetupParams {
			vmPath("export_dir", e.ExportDir, true)
			if dirs[e.ExportDir] {
				t.Fatalf("export_dir %q accepted twice", e.ExportDir)
			}
			dirs[e.ExportDir] = true
			if e.ExportTo == "" {
				t.Fatalf("export_to accepted while empty")
			}
			noMeta("export_to", e.ExportTo)
			// export_options is a comma-separated list with key=value items.
			noSpace("export_options", e.ExportOptions)
			if strings.ContainsAny(e.ExportOptions, strings.NewReplacer(",", "", "=", "").Replace(forbidden)) {
				t.Fatalf("export_options %q accepted with a metacharacter", e.ExportOptions)
			}
		}
		for _, f := range []string{s.Username, s.SSHCPName, s.NICCPName, s.NFSServerImpl, s.VolumeIdentification} {
			noMeta("storage_server field", f)
		}
	}
	if a := c.Ansible; a != nil {
		if a.KubesprayRootPath != "" || a.TransferringInventoryPath != "" {
			vmPath("kubespray_root_path", a.KubesprayRootPath, true)
			// transferring_inventory_path may be relative or end in '/':
			// what must be safe is the file heatsible writes.
			inv, prob := a.InventoryFile()
			if prob != nil {
				t.Fatalf("Validate accepted what InventoryFile refuses: %v", prob)
			}
			vmPath("the kubespray inventory file", inv.Path, true)
			if inv.Format != "ini" && inv.Format != "yaml" {
				t.Fatalf("inventory format %q", inv.Format)
			}
		}
		noMeta("ansible.ip_address", a.IPAddress)
		noMeta("ansible.username", a.Username)
	}
	for _, n := range []*Node{c.MasterNode, c.WorkerNode} {
		if n == nil {
			t.Fatalf("accepted without master_node or worker_node")
		}
		for _, v := range []string{n.AspectID, n.SSHCPName, n.NICCPName, n.Username, n.PodCIDR, n.ClusterCIDR, n.ClusterCPName, n.ClusterFIPName} {
			noMeta("node field", v)
		}
		vmPath("kubeconfig", n.Kubeconfig, false)
		if strings.HasPrefix(n.Username, "-") {
			t.Fatalf("username %q accepted, which reads as an option", n.Username)
		}
	}
	root, err := filepath.EvalSymlinks(pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.PVRegistrationParams {
		p := r.PVManifestFilePath
		noMeta("pv_manifest_file_path", p)
		real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, "./"))))
		if err != nil {
			t.Fatalf("pv_manifest_file_path %q accepted but does not resolve: %v", p, err)
		}
		if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("pv_manifest_file_path %q accepted but resolves outside the package: %s", p, real)
		}
		noMeta("nfs_server_cp", r.NFSServerCP)
	}
	if pr := c.Proxy; pr != nil {
		// URLs may hold '&' or '=', but they travel in a vars file, never
		// through a shell: only whitespace and control characters matter.
		for _, v := range []string{pr.HTTPProxy, pr.HTTPSProxy, pr.NoProxy} {
			noSpace("proxy field", v)
		}
		noMeta("proxy.k8s_node_cidr", pr.K8sNodeCIDR)
	}
}
