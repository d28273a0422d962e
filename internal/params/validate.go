package params

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heatsible/heatsible/internal/manifest"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/topology"
)

// Options are what Validate needs besides the request itself.
type Options struct {
	// PackageDir is the VNF package directory; manifest and script paths are
	// relative to it.
	PackageDir string
	// RequirePackage makes a missing PackageDir a problem when the request
	// names package files. Without it, those files are only checked for form
	// (commands that do not read them, such as inventory).
	RequirePackage bool
	// WholeRun says the request is checked for an operation that builds the
	// cluster (instantiate-end) without --tags: heatsible validate without
	// --tags, which the Tacker v2 shim calls before such a run. A
	// script_path that nothing would run is then a problem
	// (ScriptPathProblem); run and plan check it in lcm, where the
	// operation and its --tags are known.
	WholeRun bool
}

// NeedsPackage reports whether the request names files of the VNF package.
func (r *Request) NeedsPackage() bool {
	return len(r.Cluster.PVRegistrationParams) > 0 || r.Cluster.ExternalLBParam != nil
}

var (
	// resourceName is a Heat resource / CP / aspect name as Tacker writes
	// them. Narrower than Heat allows, on purpose: these names end up in
	// Ansible variables and log lines.
	resourceName = topology.ResourceName
	userName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`)
	// safePath is the character set allowed in paths on the VMs: they are
	// written into /etc/exports, fstab and ganesha.conf, where a space, a
	// quote or a parenthesis changes the meaning of the line.
	safePath = regexp.MustCompile(`^[A-Za-z0-9_./@+-]+$`)
	// exportOption is one NFS export option (rw, sync, anonuid=65534, ...).
	exportOption = regexp.MustCompile(`^[a-z_]+(=[A-Za-z0-9_:./-]+)?$`)
)

// systemDirs may not be a mount_to or an export_dir: mounting a volume
// there hides the system's own files. The ones in systemTrees may not hold
// one below them either: exporting them would let the NFS clients read or
// write the storage server's configuration, credentials, crontabs or
// package database (/root, /etc, /var/spool/cron, ...), and a volume
// mounted there would replace them.
//
// systemDirs and systemTrees also bound transferring_inventory_path (which
// may lie in /root: Ansible hosts run as root); storageTrees are the trees
// only a mount_to or export_dir may not be in.
var (
	systemDirs   = []string{"/", "/var", "/home", "/opt", "/srv", "/mnt", "/media", "/root", "/var/lib", "/var/log", "/var/tmp", "/var/cache"}
	systemTrees  = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/nfs"}
	storageTrees = append([]string{"/root", "/snap", "/lost+found", "/var/backups", "/var/lib/containerd", "/var/lib/docker", "/var/lib/etcd", "/var/lib/heatsible",
		"/var/lib/kubelet", "/var/log", "/var/mail", "/var/spool"}, systemTrees...)
)

const (
	maxName     = 255
	maxPassword = 1024
	maxPath     = 1024
	// maxExportOptions bounds export_options: a real list is under 100
	// characters, and it ends up on one line of /etc/exports.
	maxExportOptions = 512
	// maxURL bounds http_proxy and https_proxy.
	maxURL = 2048
)

// Validate checks the request on its own and against the package directory,
// and returns every problem at once (nil when there is none).
func (r *Request) Validate(opts Options) error {
	var ps Problems
	c := &r.Cluster
	p := Prefix
	if c.MasterNode == nil {
		ps.add(p+".master_node", "is missing; give aspect_id, ssh_cp_name, nic_cp_name, username and password of the master nodes")
	} else {
		validateNode(&ps, p+".master_node", c.MasterNode, true)
	}
	if c.WorkerNode == nil {
		ps.add(p+".worker_node", "is missing; give aspect_id, ssh_cp_name, nic_cp_name, username and password of the worker nodes")
	} else {
		validateNode(&ps, p+".worker_node", c.WorkerNode, false)
	}
	if c.Proxy != nil {
		validateProxy(&ps, p+".proxy", c.Proxy)
	}
	if c.StorageServer != nil {
		validateStorage(&ps, p+".storage_server", c.StorageServer)
	}
	// The directories the storage server exports: an NFS PV must lie in
	// one. Not judged while an export_dir is itself refused (it may be
	// the one the PV means).
	var exportDirs []string
	if s := c.StorageServer; s != nil {
		for _, e := range s.NFSServerSetupParams {
			var ignore Problems
			if !checkPath(&ignore, "", e.ExportDir, true) {
				exportDirs = nil
				break
			}
			exportDirs = append(exportDirs, e.ExportDir)
		}
	}
	pvNames := map[string]int{}
	for i := range c.PVRegistrationParams {
		pp := fmt.Sprintf("%s.pv_registration_params[%d]", p, i)
		reg := &c.PVRegistrationParams[i]
		// nfs_server_cp is checked for form here; whether it is required
		// depends on the manifest (NFS: yes; CSI: no NFS server to name).
		checkName(&ps, pp+".nfs_server_cp", reg.NFSServerCP, false)
		if !checkPackageFile(&ps, pp+".pv_manifest_file_path", reg.PVManifestFilePath, opts) {
			continue
		}
		pv, err := ReadManifest(opts.PackageDir, reg.PVManifestFilePath)
		if err != nil {
			ps.add(pp+".pv_manifest_file_path", "%v", err)
			continue
		}
		if pv.Source == manifest.SourceNFS && len(exportDirs) > 0 {
			switch {
			case hasDotDot(pv.NFSPath):
				ps.add(pp+".pv_manifest_file_path", "manifest %s: spec.nfs.path %s has a '..' component; give the exported directory itself", quote(reg.PVManifestFilePath), quote(pv.NFSPath))
			case under(path.Clean(pv.NFSPath), exportDirs) == "":
				ps.add(pp+".pv_manifest_file_path", "manifest %s: spec.nfs.path %s is in no export_dir of storage_server.nfs_server_setup_params (%s); the PV would point at a directory the storage server does not export: give one of those directories (or one inside it)",
					quote(reg.PVManifestFilePath), quote(pv.NFSPath), strings.Join(exportDirs, ", "))
			}
		}
		if pv.Source == manifest.SourceNFS && reg.NFSServerCP == "" {
			ps.add(pp+".nfs_server_cp", "is missing; %s is an NFS PersistentVolume, whose spec.nfs.server heatsible sets to this CP's address: give the storage server's CP name", pv.Name)
		}
		if j, dup := pvNames[pv.Name]; dup {
			ps.add(pp+".pv_manifest_file_path", "defines the PV %s, as pv_registration_params[%d] does; give each PV its own name", quote(pv.Name), j)
		}
		pvNames[pv.Name] = i
	}
	if c.Ansible != nil {
		validateAnsible(&ps, p+".ansible", c.Ansible)
		if m := c.MasterNode; m != nil && c.Ansible.KubesprayRootPath != "" {
			for _, f := range []struct{ name, v, kvar string }{{"pod_cidr", m.PodCIDR, "kube_pods_subnet"}, {"cluster_cidr", m.ClusterCIDR, "kube_service_addresses"}} {
				if pr, err := netip.ParsePrefix(f.v); err == nil && !pr.Addr().Is4() {
					ps.add(p+".master_node."+f.name, "%s is an IPv6 network; heatsible hands kubespray %s, which is IPv4 (for IPv6 set kubespray's %s_ipv6 in the inventory's group_vars and leave %s out)", quote(f.v), f.kvar, f.kvar, f.name)
				}
			}
		}
	}
	if lb := c.ExternalLBParam; lb != nil {
		lp := p + ".external_lb_param"
		checkName(&ps, lp+".ssh_cp_name", lb.SSHCPName, true)
		checkUser(&ps, lp+".ssh_username", lb.SSHUsername)
		checkPassword(&ps, lp+".ssh_password", lb.SSHPassword)
		if checkPackageFile(&ps, lp+".script_path", lb.ScriptPath, opts) {
			// Read it whole: which interface it follows decides how every
			// operation drives it (docs/external-lb.md).
			if _, _, err := ReadLBScript(opts.PackageDir, lb.ScriptPath); err != nil {
				ps.add(lp+".script_path", "%v", err)
			}
		}
	}
	if opts.WholeRun {
		if prob := r.ScriptPathProblem(); prob != nil {
			ps = append(ps, *prob)
		}
	}
	return mergeProblems(r.parseProblems, ps).Err()
}

// mergeProblems puts the type errors first and drops later problems about
// the same field or its children ("is missing" after "is a JSON string").
func mergeProblems(typeErrs, others Problems) Problems {
	out := append(Problems(nil), typeErrs...)
	for _, p := range others {
		shadowed := false
		for _, t := range typeErrs {
			if p.Path == t.Path || strings.HasPrefix(p.Path, t.Path+".") || strings.HasPrefix(p.Path, t.Path+"[") {
				shadowed = true
				break
			}
		}
		if !shadowed {
			out = append(out, p)
		}
	}
	return out
}

func validateNode(ps *Problems, p string, n *Node, master bool) {
	checkName(ps, p+".aspect_id", n.AspectID, true)
	checkName(ps, p+".ssh_cp_name", n.SSHCPName, true)
	checkName(ps, p+".nic_cp_name", n.NICCPName, true)
	checkUser(ps, p+".username", n.Username)
	checkPassword(ps, p+".password", n.Password)
	if !master {
		for _, f := range []struct{ name, v string }{{"pod_cidr", n.PodCIDR}, {"cluster_cidr", n.ClusterCIDR}, {"cluster_cp_name", n.ClusterCPName}, {"cluster_fip_name", n.ClusterFIPName}, {"kubeconfig", n.Kubeconfig}} {
			if f.v != "" {
				ps.add(p+"."+f.name, "belongs to master_node only; remove it here")
			}
		}
		return
	}
	checkCIDR(ps, p+".pod_cidr", n.PodCIDR, false)
	checkCIDR(ps, p+".cluster_cidr", n.ClusterCIDR, false)
	checkName(ps, p+".cluster_cp_name", n.ClusterCPName, false)
	checkName(ps, p+".cluster_fip_name", n.ClusterFIPName, false)
	if msg := KubeconfigProblem(n.Kubeconfig); msg != "" {
		ps.add(p+".kubeconfig", "%s", msg)
	}
}

// KubeconfigProblem says what is wrong with an admin kubeconfig path on the
// first master (master_node.kubeconfig, run --kubeconfig), or "" when it is
// fine or empty. The path reaches Ansible as data and a shell command only
// quoted; it must still be a plain absolute file path, as a path on a VM is
// everywhere else in the request.
func KubeconfigProblem(v string) string {
	var ps Problems
	if !checkPath(&ps, "", v, false) && v != "" {
		return ps[0].Msg
	}
	if v == "/" || strings.HasSuffix(v, "/") {
		return fmt.Sprintf("%s is a directory; give the kubeconfig file's path, e.g. /etc/kubernetes/admin.conf", quote(v))
	}
	return ""
}

func validateStorage(ps *Problems, p string, s *StorageServer) {
	checkName(ps, p+".ssh_cp_name", s.SSHCPName, true)
	// nic_cp_name defaults to ssh_cp_name (Parse): it is missing here only
	// when both are.
	checkName(ps, p+".nic_cp_name", s.NICCPName, false)
	checkUser(ps, p+".username", s.Username)
	checkPassword(ps, p+".password", s.Password)
	switch s.NFSServerImpl {
	case "", "kernel", "ganesha":
	default:
		ps.add(p+".nfs_server_impl", "%s is neither \"kernel\" nor \"ganesha\"", quote(s.NFSServerImpl))
	}
	switch s.VolumeIdentification {
	case "", VolumeByID, VolumeByDeviceName:
	default:
		ps.add(p+".volume_identification", "%s is neither %q (the default: find each volume by its id) nor %q (platforms whose disks carry no serial: trust Heat's device name)",
			quote(s.VolumeIdentification), VolumeByID, VolumeByDeviceName)
	}
	if len(s.CinderVolumeSetupParams) == 0 {
		ps.add(p+".cinder_volume_setup_params", "is empty or missing; give at least one {volume_resource_id, mount_to}")
	}
	if len(s.NFSServerSetupParams) == 0 {
		ps.add(p+".nfs_server_setup_params", "is empty or missing; give at least one {export_dir, export_to}")
	}
	resources := map[string]int{}
	mounts := map[string]int{}
	var goodMounts []string
	for i, v := range s.CinderVolumeSetupParams {
		vp := fmt.Sprintf("%s.cinder_volume_setup_params[%d]", p, i)
		if checkName(ps, vp+".volume_resource_id", v.VolumeResourceID, true) {
			if j, dup := resources[v.VolumeResourceID]; dup {
				ps.add(vp+".volume_resource_id", "%s is also cinder_volume_setup_params[%d]; mount each volume once", quote(v.VolumeResourceID), j)
			}
			resources[v.VolumeResourceID] = i
		}
		if !checkPath(ps, vp+".mount_to", v.MountTo, true) {
			continue
		}
		if j, dup := mounts[v.MountTo]; dup {
			ps.add(vp+".mount_to", "%s is also cinder_volume_setup_params[%d].mount_to; give each volume its own directory", quote(v.MountTo), j)
			continue
		}
		mounts[v.MountTo] = i
		if msg := systemDirProblem(v.MountTo); msg != "" {
			ps.add(vp+".mount_to", "%s", msg)
			continue
		}
		goodMounts = append(goodMounts, v.MountTo)
	}
	exports := map[string]int{}
	for i, e := range s.NFSServerSetupParams {
		ep := fmt.Sprintf("%s.nfs_server_setup_params[%d]", p, i)
		if checkPath(ps, ep+".export_dir", e.ExportDir, true) {
			if msg := systemDirProblem(e.ExportDir); msg != "" {
				ps.add(ep+".export_dir", "%s", msg)
			} else if j, dup := exports[e.ExportDir]; dup {
				ps.add(ep+".export_dir", "%s is also nfs_server_setup_params[%d].export_dir; export each directory once (list several clients by giving a CIDR that covers them)", quote(e.ExportDir), j)
			}
			exports[e.ExportDir] = i
			if len(goodMounts) > 0 && under(e.ExportDir, goodMounts) == "" && systemDirProblem(e.ExportDir) == "" {
				ps.add(ep+".export_dir", "%s is not on any volume (mount_to: %s); its data would land on the server's root disk and be lost on heal. Put it under a mount_to", quote(e.ExportDir), strings.Join(goodMounts, ", "))
			}
		}
		checkExportTo(ps, ep+".export_to", e.ExportTo)
		if len(e.ExportOptions) > maxExportOptions {
			ps.add(ep+".export_options", "is %d characters long; the limit is %d", len(e.ExportOptions), maxExportOptions)
		} else if e.ExportOptions != "" {
			for _, o := range strings.Split(e.ExportOptions, ",") {
				if !exportOption.MatchString(o) {
					ps.add(ep+".export_options", "has the option %s; write comma-separated NFS export options such as rw,sync,no_subtree_check (no spaces or parentheses)", quote(o))
					break
				}
				if s.NFSServerImpl == "ganesha" && !ganeshaOption(o) {
					ps.add(ep+".export_options", "has the option %s, which nfs-ganesha cannot honour (it would serve something other than what was asked). "+
						"Translated: %s; ignored (no meaning for ganesha): %s", quote(o), strings.Join(ganeshaTranslated, ", ")+", anonuid=, anongid=", strings.Join(ganeshaIgnored, ", ")+", fsid=")
				}
			}
		}
	}
	if s.NFSServerImpl == "ganesha" {
		checkganeshaExportIDs(ps, p, s.NFSServerSetupParams)
	}
}

// The export options roles/nfs_server translates into ganesha.conf
// (templates/ganesha.conf.j2), and those it ignores because they have no
// meaning for ganesha; anonuid=/anongid= (digits) and fsid= are accepted
// too. Any other option is refused: ganesha has no exports(5) parser.
var (
	ganeshaTranslated = []string{"ro", "rw", "root_squash", "no_root_squash", "all_squash", "no_all_squash", "secure", "insecure", "sec=sys"}
	ganeshaIgnored    = []string{"sync", "async", "no_subtree_check", "subtree_check", "wdelay", "no_wdelay", "hide", "nohide", "crossmnt", "no_acl"}
	ganeshaAnon       = regexp.MustCompile(`^anon(uid|gid)=[0-9]+$`)
)

func ganeshaOption(o string) bool {
	return slices.Contains(ganeshaTranslated, o) || slices.Contains(ganeshaIgnored, o) || ganeshaAnon.MatchString(o) || strings.HasPrefix(o, "fsid=")
}

// ganeshaExportID is the Export_Id roles/nfs_server gives a directory in
// ganesha.conf (its filter nfs_server_table): from the path, so that it
// stays when exports are added or reordered (NFSv3 file handles carry it).
func ganeshaExportID(dir string) int {
	sum := sha1.Sum([]byte(dir))
	return int(binary.BigEndian.Uint32(sum[:4])%65534) + 1
}

// checkganeshaExportIDs refuses two directories whose Export_Ids clash:
// ganesha would not start.
func checkganeshaExportIDs(ps *Problems, p string, exports []NFSExport) {
	ids := map[int]int{}
	for i, e := range exports {
		if e.ExportDir == "" {
			continue
		}
		id := ganeshaExportID(e.ExportDir)
		if j, dup := ids[id]; dup && exports[j].ExportDir != e.ExportDir {
			ps.add(fmt.Sprintf("%s.nfs_server_setup_params[%d].export_dir", p, i), "%s has the ganesha Export_Id %d of nfs_server_setup_params[%d].export_dir %s (both derived from the path); rename one of the two directories",
				quote(e.ExportDir), id, j, quote(exports[j].ExportDir))
			continue
		}
		ids[id] = i
	}
}

func validateAnsible(ps *Problems, p string, a *Ansible) {
	checkHost(ps, p+".ip_address", a.IPAddress, true)
	checkUser(ps, p+".username", a.Username)
	checkPassword(ps, p+".password", a.Password)
	checkAnsiblePlaybooks(ps, p, a)
	if a.KubesprayRootPath != "" || a.TransferringInventoryPath != "" {
		// The same function decides for plan and run (lcm).
		if _, prob := a.InventoryFile(); prob != nil {
			*ps = append(*ps, *prob)
		}
	}
}

// checkName checks a Heat resource / CP / aspect name. It reports whether the
// value is present and well-formed.
func checkName(ps *Problems, p, v string, required bool) bool {
	switch {
	case v == "":
		if required {
			ps.add(p, "is missing; give the Heat resource name")
		}
		return false
	case len(v) > maxName:
		ps.add(p, "is %d characters long; a Heat resource name has at most %d", len(v), maxName)
	case !resourceName.MatchString(v):
		ps.add(p, "%s is not a Heat resource name; use ASCII letters, digits, '_', '-', '.' and ':' only", quote(v))
	default:
		return true
	}
	return false
}

func checkUser(ps *Problems, p, v string) {
	switch {
	case v == "":
		ps.add(p, "is missing; give the SSH user name")
	case !userName.MatchString(v):
		ps.add(p, "%s is not a valid user name; use at most 32 ASCII letters, digits, '_', '.' or '-', starting with a letter or '_'", quote(v))
	}
}

func checkPassword(ps *Problems, p, v string) {
	// The value itself is never echoed: it is a secret.
	switch {
	case v == "":
		ps.add(p, "is missing; give the SSH password")
	case len(v) > maxPassword:
		ps.add(p, "is longer than %d bytes", maxPassword)
	case hasControl(v):
		ps.add(p, "contains a control character (newline, tab, NUL, U+0085, ...) or a line separator (U+2028, U+2029); remove it")
	}
}

// checkPath checks an absolute path on a VM. It reports whether the value is
// present and well-formed.
func checkPath(ps *Problems, p, v string, required bool) bool {
	switch {
	case v == "":
		if required {
			ps.add(p, "is missing; give an absolute directory path")
		}
		return false
	case len(v) > maxPath:
		ps.add(p, "is %d characters long; the limit is %d", len(v), maxPath)
	case !strings.HasPrefix(v, "/"):
		ps.add(p, "%s is not an absolute path; start it with /", quote(v))
	case !safePath.MatchString(v):
		ps.add(p, "%s contains characters that are not allowed in a path here; use ASCII letters, digits and _ . / @ + - only (no spaces, quotes, ';', parentheses, '*' or non-ASCII look-alikes)", quote(v))
	case hasDotDot(v):
		ps.add(p, "%s contains a '..' component; give the real directory", quote(v))
	case path.Clean(v) != v:
		ps.add(p, "%s is not a clean path; write it as %q", quote(v), path.Clean(v))
	default:
		return true
	}
	return false
}

// checkPackageFile checks the form of a path relative to the VNF package
// directory. It reports whether the file can be looked up.
func checkPackageFile(ps *Problems, p, v string, opts Options) bool {
	// Tacker writes these as "./Scripts/x.sh" as often as "Scripts/x.sh".
	v = strings.TrimPrefix(v, "./")
	switch {
	case v == "":
		ps.add(p, "is missing; give a path relative to the VNF package directory")
	case len(v) > maxPath:
		ps.add(p, "is %d characters long; the limit is %d", len(v), maxPath)
	case hasControl(v):
		ps.add(p, "contains a control character; remove it")
	case hasInvisible(v):
		ps.add(p, "%s contains an invisible or direction-changing character (zero-width space, right-to-left override, non-breaking space, ...) or bytes that are not UTF-8; type the path again", quote(v))
	case strings.HasPrefix(v, "/"):
		ps.add(p, "%s is absolute; give a path relative to the VNF package directory, e.g. Files/kubernetes/pv.yaml", quote(v))
	case hasDotDot(v):
		ps.add(p, "%s contains '..'; a file must lie inside the VNF package directory", quote(v))
	case opts.PackageDir == "":
		if opts.RequirePackage {
			ps.add(p, "cannot be read without the VNF package directory; pass --package DIR")
		}
	default:
		return true
	}
	return false
}

func checkExportTo(ps *Problems, p, v string) {
	switch {
	case v == "":
		ps.add(p, "is missing; give the IP address, CIDR or host name of the NFS clients")
		return
	case strings.Contains(v, "*"):
		ps.add(p, "%s contains '*'; wildcards would export to anyone. Give an IP address, a CIDR or a host name", quote(v))
		return
	case strings.Contains(v, "/"):
		pr, err := netip.ParsePrefix(v)
		if err != nil {
			ps.add(p, "%s is not an IP address or CIDR (write e.g. 10.10.0.0/24)", quote(v))
			return
		}
		if msg := worldPrefix(pr); msg != "" {
			ps.add(p, "%s %s; give the cluster's network", quote(v), msg)
		}
		return
	}
	if msg := topology.ZoneProblem(v); msg != "" {
		ps.add(p, "%s", msg)
		return
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return
	}
	if !topology.ValidHostname(v) {
		ps.add(p, "%s is not an IP address, a CIDR or a host name", quote(v))
	}
}

// ipv4InIPv6 are the IPv6 ranges that stand for the whole IPv4 address
// space: IPv4-mapped, IPv4-compatible (deprecated) and NAT64's well-known
// prefix.
var ipv4InIPv6 = []netip.Prefix{
	netip.MustParsePrefix("::ffff:0.0.0.0/96"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// worldPrefix says how an export_to network exports to the world, or ""
// when it does not: a prefix shorter than /8 (no private network, IPv4's
// 10/8 or IPv6's fd00::/8, is larger) covers public addresses by the
// billion; an IPv6 prefix that covers a whole range of IPv4-in-IPv6
// addresses covers every IPv4 address, and one inside such a range is
// judged as the IPv4 network it stands for.
func worldPrefix(pr netip.Prefix) string {
	pr = pr.Masked()
	bits := pr.Bits()
	if pr.Addr().Is6() {
		for _, r := range ipv4InIPv6 {
			if pr.Bits() <= r.Bits() && pr.Contains(r.Addr()) {
				return fmt.Sprintf("covers %s, every IPv4 address, as 0.0.0.0/0 does", r)
			}
			if r.Contains(pr.Addr()) {
				bits = pr.Bits() - 96
				break
			}
		}
	}
	switch {
	case bits == 0:
		return "exports to every address"
	case bits < 8:
		return fmt.Sprintf("is a /%d network, 1/%d of every address there is, public ones included: it exports to the world as /0 does (no private network is larger than /8)", bits, 1<<bits)
	}
	return ""
}

func checkCIDR(ps *Problems, p, v string, required bool) {
	if v == "" {
		if required {
			ps.add(p, "is missing; give a CIDR such as 10.10.0.0/24")
		}
		return
	}
	if _, err := netip.ParsePrefix(v); err != nil {
		ps.add(p, "%s is not a CIDR; write it as 10.10.0.0/24", quote(v))
	}
}

func checkHost(ps *Problems, p, v string, required bool) {
	if v == "" {
		if required {
			ps.add(p, "is missing; give an IP address or host name")
		}
		return
	}
	if msg := topology.ZoneProblem(v); msg != "" {
		ps.add(p, "%s", msg)
		return
	}
	if !topology.ValidAddress(v) {
		ps.add(p, "%s is not an IP address or host name", quote(v))
		return
	}
	// 0.0.0.0 is the seeds' placeholder; connecting to it reaches this
	// machine, not the Ansible host.
	if a, err := netip.ParseAddr(v); err == nil && (a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})) {
		ps.add(p, "%s is not a host's address (unspecified, multicast or broadcast); give the Ansible host's address", quote(v))
	}
}

// systemDirProblem says why dir may not be a mount_to or an export_dir, or
// "" when it may: a system directory, a user's home (/home/NAME: its .ssh
// and shell profile), or a hidden directory (.ssh, .kube, .gnupg hold
// credentials and configuration) anywhere in the path.
func systemDirProblem(dir string) string {
	for _, d := range systemDirs {
		if dir == d {
			return fmt.Sprintf("%s is a system directory; mounting a volume there hides the system's own files. Use a directory of its own, e.g. /volume", quote(dir))
		}
	}
	if t := under(dir, storageTrees); t != "" {
		return fmt.Sprintf("%s is inside the system directory %s, whose files the NFS clients could read or replace; use a directory of its own, e.g. /volume", quote(dir), t)
	}
	if rest, ok := strings.CutPrefix(dir, "/home/"); ok && !strings.Contains(rest, "/") {
		return fmt.Sprintf("%s is a user's home directory: its .ssh/authorized_keys and shell profile would be on the volume and exported; use a directory of its own, e.g. /volume", quote(dir))
	}
	for _, part := range strings.Split(dir, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Sprintf("%s has the hidden directory %s in it; hidden directories hold credentials and configuration (.ssh, .kube, .gnupg): use a directory of its own, e.g. /volume", quote(dir), quote(part))
		}
	}
	return ""
}

// under returns the first of dirs that is p or an ancestor of p.
func under(p string, dirs []string) string {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return d
		}
	}
	return ""
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// hasControl reports whether s holds a control character (C0, DEL or C1,
// such as U+0085, which YAML 1.1 and Python read as a line break) or a
// line or paragraph separator (U+2028, U+2029).
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// hasInvisible reports whether s is not UTF-8 or holds a character that is
// invisible or reorders text when shown: a file name with one looks like
// another file's name.
func hasInvisible(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) || (unicode.IsSpace(r) && r != ' ') || unicode.IsControl(r) {
			return true
		}
	}
	return false
}

func isPort(s string) bool {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		n = n*10 + int(r-'0')
		if n > 65535 {
			return false
		}
	}
	return n >= 1
}

// quote shows a user's value in an error message, escaped and cut short so a
// hostile value cannot flood the terminal or forge further lines.
func quote(v string) string { return redact.Quote(v) }

// ValidateTopology checks that every name the request refers to exists in
// the discovered (or loaded) topology. It runs once the topology is known,
// still before anything on any host is touched.
func (r *Request) ValidateTopology(t *topology.Topology) error {
	var ps Problems
	c := &r.Cluster
	p := Prefix
	if len(t.ByRole(topology.RoleMaster)) == 0 {
		ps.add(p+".master_node.aspect_id", "the cluster has no master node (topology of %s); check the aspect_id and the stack", t.Cluster)
	}
	if s := c.StorageServer; s != nil {
		if len(t.ByRole(topology.RoleStorage)) != 1 {
			ps.add(p+".storage_server", "the topology of %s has %d storage nodes; want exactly one", t.Cluster, len(t.ByRole(topology.RoleStorage)))
		}
		for i, v := range s.CinderVolumeSetupParams {
			if _, ok := t.Volume(v.VolumeResourceID); !ok && v.VolumeResourceID != "" {
				ps.add(fmt.Sprintf("%s.storage_server.cinder_volume_setup_params[%d].volume_resource_id", p, i),
					"%s is not a volume of %s (it has: %s); use the OS::Cinder::Volume resource name", quote(v.VolumeResourceID), t.Cluster, volumeNames(t))
			}
		}
	}
	for i, pv := range c.PVRegistrationParams {
		if _, ok := t.CPs[pv.NFSServerCP]; !ok && pv.NFSServerCP != "" {
			ps.add(fmt.Sprintf("%s.pv_registration_params[%d].nfs_server_cp", p, i),
				"%s is not a CP of %s (it has: %s); use the storage server's CP name", quote(pv.NFSServerCP), t.Cluster, cpNames(t))
		}
	}
	if m := c.MasterNode; m != nil && m.ClusterCPName != "" {
		if _, ok := t.CPs[m.ClusterCPName]; !ok {
			ps.add(p+".master_node.cluster_cp_name", "%s is not a CP of %s (it has: %s)", quote(m.ClusterCPName), t.Cluster, cpNames(t))
		}
	}
	if c.Ansible != nil && c.Ansible.KubesprayRootPath != "" {
		// kubespray's ip and access_ip: IP SANs of etcd's certificate
		// (roles/etcd/templates/openssl.conf.j2), the kubelet's and etcd's
		// bind address; a host name there breaks the install.
		for i, n := range t.Nodes {
			if n.Role != topology.RoleMaster && n.Role != topology.RoleWorker {
				continue
			}
			if _, err := netip.ParseAddr(n.Address); err != nil {
				ps.add(fmt.Sprintf("topology.nodes[%d].address", i), "%s is a host name; kubespray takes a node's ip and access_ip as IP addresses (etcd's certificates list them as IP SANs, the kubelet and etcd bind to them): give the node's internal IP address", quote(n.Address))
			}
		}
	}
	if lb := c.ExternalLBParam; lb != nil && lb.SSHCPName != "" {
		_, isCP := t.CPs[lb.SSHCPName]
		if !isCP && len(t.ByRole(topology.RoleExternalLB)) == 0 {
			ps.add(p+".external_lb_param.ssh_cp_name", "%s is not a CP of %s and the topology has no external_lb node", quote(lb.SSHCPName), t.Cluster)
		}
	}
	return ps.Err()
}

func cpNames(t *topology.Topology) string {
	if len(t.CPs) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(t.CPs))
	for k := range t.CPs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func volumeNames(t *topology.Topology) string {
	if len(t.Volumes) == 0 {
		return "none"
	}
	names := make([]string, len(t.Volumes))
	for i, v := range t.Volumes {
		names[i] = v.Resource
	}
	return strings.Join(names, ", ")
}
