package params

import (
	"fmt"
	"net/netip"
	"path"
	"strings"
)

// KubesprayInventory is the inventory file heatsible hands kubespray: where
// it goes on the machine that runs Ansible, and its format.
type KubesprayInventory struct {
	// Path is absolute and clean.
	Path string
	// Format is "ini" or "yaml" (inventory.INI, inventory.YAML: params
	// comes before the inventory package in the data flow, so it names
	// them as strings).
	Format string
}

// InventoryFile decides where the inventory for kubespray goes, from
// transferring_inventory_path and kubespray_root_path. It is the only place
// that decides: validate, plan and run all call it, so no path passes one
// and fails another.
//
// The forms (docs/kubespray.md):
//   - a path ending in ".ini" is an INI inventory file (the kubespray spec's
//     "ansible-playbook -i inventory/mycluster/hosts.ini"), ".yaml" or
//     ".yml" a YAML one;
//   - anything else, and any path ending in "/", is a directory: heatsible
//     writes hosts.yaml in it (as Tacker's kubespray driver does);
//   - a relative path is relative to kubespray_root_path (a leading "./" is
//     allowed);
//   - an absolute path may lie outside kubespray_root_path, but not in a
//     system directory (/etc, /usr, /home itself, ...; /tmp is allowed);
//   - inside kubespray_root_path the file must be under inventory/, as in
//     kubespray's layout: anywhere else it could replace one of kubespray's
//     own files (cluster.yml, a role's defaults); the root itself is no
//     inventory directory either;
//   - ".json", ".cfg", ".conf", ".txt" and ".toml" name files heatsible
//     cannot write as an inventory and are refused, and so is any ".."
//     component (a path must say where it goes, not climb out of where it
//     seems to go).
//
// The Problem names the field at fault (kubespray_root_path or
// transferring_inventory_path).
func (a *Ansible) InventoryFile() (KubesprayInventory, *Problem) {
	p := Prefix + ".ansible"
	bad := func(field, format string, args ...any) (KubesprayInventory, *Problem) {
		return KubesprayInventory{}, &Problem{Path: p + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	var ps Problems
	if !checkPath(&ps, p+".kubespray_root_path", a.KubesprayRootPath, true) {
		return KubesprayInventory{}, &ps[0]
	}
	root := a.KubesprayRootPath
	v := a.TransferringInventoryPath
	switch {
	case v == "":
		return bad("transferring_inventory_path", "is missing; give the inventory file (e.g. inventory/mycluster/hosts.yaml, relative to kubespray_root_path) or its directory")
	case len(v) > maxPath:
		return bad("transferring_inventory_path", "is %d characters long; the limit is %d", len(v), maxPath)
	case !safePath.MatchString(v):
		return bad("transferring_inventory_path", "%s contains characters that are not allowed in a path here; use ASCII letters, digits and _ . / @ + - only", quote(v))
	case hasDotDot(v):
		return bad("transferring_inventory_path", "%s contains a '..' component; give the real place (relative to kubespray_root_path, or absolute)", quote(v))
	}
	dir := strings.HasSuffix(v, "/")
	full := path.Clean(v)
	if !path.IsAbs(full) {
		full = path.Join(root, full)
	}
	if full == root {
		return bad("transferring_inventory_path", "%s is kubespray_root_path itself; give a directory of its own, e.g. inventory/mycluster", quote(v))
	}
	var inv KubesprayInventory
	switch ext := path.Ext(full); {
	case dir:
		inv = KubesprayInventory{full + "/hosts.yaml", "yaml"}
	case ext == ".ini":
		inv = KubesprayInventory{full, "ini"}
	case ext == ".yaml" || ext == ".yml":
		inv = KubesprayInventory{full, "yaml"}
	case ext == ".json" || ext == ".cfg" || ext == ".conf" || ext == ".txt" || ext == ".toml":
		return bad("transferring_inventory_path", "%s: heatsible writes the inventory as INI (.ini) or YAML (.yaml, .yml); give such a file, or a directory (it then writes hosts.yaml in it)", quote(v))
	default:
		inv = KubesprayInventory{full + "/hosts.yaml", "yaml"}
	}
	if rel, inside := strings.CutPrefix(inv.Path, root+"/"); inside && !strings.HasPrefix(rel, "inventory/") {
		return bad("transferring_inventory_path", "%s is %s, inside kubespray_root_path but not under its inventory/ directory, where it could replace one of kubespray's own files; put it under inventory/, e.g. inventory/mycluster/hosts.yaml", quote(v), inv.Path)
	}
	if d := path.Dir(inv.Path); d != "/tmp" && !strings.HasPrefix(d, "/tmp/") {
		sys := under(d, systemTrees)
		for _, s := range systemDirs {
			if d == s {
				sys = s
			}
		}
		if sys != "" {
			return bad("transferring_inventory_path", "%s would put the inventory in %s, a system directory; give a directory of its own, e.g. %s/inventory/mycluster", quote(v), d, root)
		}
	}
	return inv, nil
}

// KubesprayCIDR returns the network of a CIDR of the request as kubespray
// takes it (host bits cleared: "192.168.3.0/16" is 192.168.0.0/16), or ""
// when v is empty or no CIDR (Validate reports that).
func KubesprayCIDR(v string) string {
	pr, err := netip.ParsePrefix(v)
	if err != nil {
		return ""
	}
	return pr.Masked().String()
}
