package render

import (
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/heatsible/heatsible/internal/manifest"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// ExternalLBScript is where the external load balancer's script (the
// request's external_lb_param.script_path) sits in the bundle.
const ExternalLBScript = "files/external_lb.sh"

// cinderVolume, nfsExport and pvManifest are the roles' variables (see each
// role's defaults/main.yml).
type cinderVolume struct {
	ID      string `yaml:"id"`
	Device  string `yaml:"device,omitempty"`
	MountTo string `yaml:"mount_to"`
}

type nfsExport struct {
	Dir     string `yaml:"dir"`
	To      string `yaml:"to"`
	Options string `yaml:"options,omitempty"`
}

type pvManifest struct {
	Name string             `yaml:"name"`
	Src  inventory.Template `yaml:"src"`
}

// nlmPV is an NFS PV whose mounts need rpc.statd and rpcbind on the nodes
// (NFSv3 with remote locks, manifest.NeedsStatd): roles/nfs_client's
// nfs_client_nlm_pvs.
type nlmPV struct {
	Name         string   `yaml:"name"`
	MountOptions []string `yaml:"mount_options"`
	Field        string   `yaml:"field"`
}

// ManifestDir is where prepared manifests sit in the bundle, relative to the
// playbook.
const ManifestDir = "manifests"

// buildVars computes group_vars, secrets and prepared manifests for req on t,
// with the bounds of waits (--wait).
func buildVars(req *params.Request, t *topology.Topology, pkgDir string, waits map[string]int, f *Files) error {
	c := req.Cluster
	all := waitVars(waits)
	f.GroupVars = map[string][]byte{}
	f.Manifests = map[string][]byte{}
	secrets := map[string]string{}
	addSecret := func(key, v string) {
		if v != "" {
			secrets[key] = v
			f.SecretValues = append(f.SecretValues, v)
		}
	}
	conn := func(group, key string) error {
		// ansible_become_password: the users have sudo with a password on
		// real VMs (passwordless on some); giving it is harmless either way.
		ref := inventory.Template("{{ heatsible_secrets." + key + " }}")
		return addGroupVars(f, group, map[string]any{
			"ansible_password":        ref,
			"ansible_become_password": ref,
		})
	}
	if m := c.MasterNode; m != nil {
		if m.Kubeconfig != "" {
			// roles/kubeconfig: kubectl reads this file (and only this one).
			all["kubectl_kubeconfig"] = m.Kubeconfig
		}
		addSecret("master_password", m.Password)
		if err := conn(inventory.GroupKubeControlPlane, "master_password"); err != nil {
			return err
		}
	}
	if w := c.WorkerNode; w != nil {
		addSecret("worker_password", w.Password)
		if err := conn(inventory.GroupKubeNode, "worker_password"); err != nil {
			return err
		}
	}
	if s := c.StorageServer; s != nil {
		addSecret("storage_password", s.Password)
		if err := conn(inventory.GroupNFSServer, "storage_password"); err != nil {
			return err
		}
		var vols []cinderVolume
		for _, v := range s.CinderVolumeSetupParams {
			tv, ok := t.Volume(v.VolumeResourceID)
			if !ok {
				return fmt.Errorf("volume %s is not in the topology", v.VolumeResourceID)
			}
			vols = append(vols, cinderVolume{ID: tv.ID, Device: tv.Device, MountTo: v.MountTo})
		}
		var exports []nfsExport
		for _, e := range s.NFSServerSetupParams {
			exports = append(exports, nfsExport{Dir: e.ExportDir, To: e.ExportTo, Options: e.ExportOptions})
		}
		all["cinder_volumes"] = vols
		all["nfs_exports"] = exports
		impl := s.NFSServerImpl
		if impl == "" {
			impl = "kernel"
		}
		all["nfs_server_impl"] = impl
		if s.VolumeIdentification == params.VolumeByDeviceName {
			// the platform's disks carry no serial (roles/cinder_volume)
			all["cinder_volume_trust_device_name"] = true
		}
	}
	if lb := c.ExternalLBParam; lb != nil {
		addSecret("external_lb_password", lb.SSHPassword)
		if err := conn(inventory.GroupExternalLB, "external_lb_password"); err != nil {
			return err
		}
	}
	proxy := map[string]string{}
	if p := c.Proxy; p != nil {
		for k, v := range map[string]string{"http_proxy": p.HTTPProxy, "https_proxy": p.HTTPSProxy, "no_proxy": p.NoProxy} {
			if v != "" {
				proxy[k] = v
			}
		}
	}
	var pvs []pvManifest
	var nlm []nlmPV
	// The storage server's addresses: the PVs it serves are the NFS PVs
	// whose spec.nfs.server is one of them (pv_register's heal guard).
	var servers []string
	addServer := func(a string) {
		if a != "" && !slices.Contains(servers, a) {
			servers = append(servers, a)
		}
	}
	for _, n := range t.ByRole(topology.RoleStorage) {
		addServer(n.Address)
		addServer(n.SSHAddress)
	}
	for i, reg := range c.PVRegistrationParams {
		pv, err := params.ReadManifest(pkgDir, reg.PVManifestFilePath)
		if err != nil {
			return fmt.Errorf("%s.pv_registration_params[%d].pv_manifest_file_path: %w", params.Prefix, i, err)
		}
		server := ""
		if pv.Source == manifest.SourceNFS {
			server = t.CPs[reg.NFSServerCP]
			addServer(server)
			if manifest.NeedsStatd(pv.MountOptions) {
				nlm = append(nlm, nlmPV{Name: pv.Name, MountOptions: pv.MountOptions, Field: pv.MountOptionsField})
			}
		}
		out, err := pv.Prepare(server)
		if err != nil {
			return err
		}
		name := pv.Name + ".yaml"
		f.Manifests[name] = out
		pvs = append(pvs, pvManifest{Name: pv.Name, Src: inventory.Template("{{ playbook_dir }}/" + path.Join(ManifestDir, name))})
	}
	all["pv_manifests"] = pvs
	if len(nlm) > 0 {
		// Only then does nfs_client ask systemd about rpc-statd and
		// rpcbind: the NFSv4 case costs the nodes nothing more.
		all["nfs_client_nlm_pvs"] = nlm
	}
	// Proxy URLs may carry user:password: then the whole map goes to the
	// secrets file (and no_proxy is masked along with them); without
	// credentials it is plain configuration, which run records and output
	// show as it is.
	proxySecret := false
	for _, v := range proxy {
		if hasUserinfo(v) {
			proxySecret = true
			f.SecretValues = append(f.SecretValues, v)
		}
	}
	if len(proxy) > 0 && !proxySecret {
		all["proxy_env"] = proxy
	}
	if c.StorageServer != nil {
		all["pv_register_nfs_servers"] = servers
	}
	if err := addGroupVars(f, inventory.GroupAll, all); err != nil {
		return err
	}
	sec := map[string]any{"heatsible_secrets": secrets}
	if proxySecret {
		sec["proxy_env"] = proxy
	}
	b, err := inventory.Marshal(sec)
	if err != nil {
		return err
	}
	f.Secrets = b
	sort.Slice(f.SecretValues, func(i, j int) bool { return len(f.SecretValues[i]) > len(f.SecretValues[j]) })
	return nil
}

func addGroupVars(f *Files, group string, vars map[string]any) error {
	b, err := inventory.Marshal(vars)
	if err != nil {
		return err
	}
	f.GroupVars[group] = b
	return nil
}

func hasUserinfo(u string) bool {
	for i := 0; i < len(u); i++ {
		if u[i] == '@' {
			return true
		}
	}
	return false
}
