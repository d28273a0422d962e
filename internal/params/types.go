// Package params holds the types of Tacker's instantiate request as heatsible
// reads it, and Validate, which returns every problem at once with its JSON
// path and the fix.
//
// Field names follow Tacker's user guides (the seeds in ../shared/seeds): the
// request body of POST /vnf_instances/{id}/instantiate carries them under
// additionalParams.k8s_cluster_installation_param.
package params

// Request is the part of an instantiate request heatsible acts on.
type Request struct {
	// Cluster is additionalParams.k8s_cluster_installation_param.
	Cluster Cluster
	// parseProblems are the type errors Parse found; Validate reports them
	// with its own, so the user sees every problem in one go.
	parseProblems Problems
	// Warnings lists fields heatsible does not know (misspelt keys, fields of
	// newer Tacker versions). They do not fail validation.
	Warnings []string
}

// Cluster is additionalParams.k8s_cluster_installation_param.
type Cluster struct {
	ScriptPath           string           `json:"script_path"`
	VimName              string           `json:"vim_name"`
	MasterNode           *Node            `json:"master_node"`
	WorkerNode           *Node            `json:"worker_node"`
	Proxy                *Proxy           `json:"proxy"`
	StorageServer        *StorageServer   `json:"storage_server"`
	PVRegistrationParams []PVRegistration `json:"pv_registration_params"`
	Ansible              *Ansible         `json:"ansible"`
	ExternalLBParam      *ExternalLB      `json:"external_lb_param"`
}

// Node is master_node or worker_node.
type Node struct {
	// AspectID names the OS::Heat::AutoScalingGroup holding the nodes.
	AspectID string `json:"aspect_id"`
	// SSHCPName is the CP heatsible (Ansible) connects to; a floating IP
	// resource name is allowed.
	SSHCPName string `json:"ssh_cp_name"`
	// NICCPName is the CP of the node's internal NIC.
	NICCPName string `json:"nic_cp_name"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	// PodCIDR, ClusterCIDR, ClusterCPName and ClusterFIPName are master_node
	// only (Kubernetes install parameters).
	PodCIDR        string `json:"pod_cidr"`
	ClusterCIDR    string `json:"cluster_cidr"`
	ClusterCPName  string `json:"cluster_cp_name"`
	ClusterFIPName string `json:"cluster_fip_name"`
	// Kubeconfig is the admin kubeconfig's path on the first master, for
	// kubectl (master_node only; heatsible extension). Empty: heatsible
	// looks in the SSH user's ~/.kube/config, then in
	// /etc/kubernetes/admin.conf and /root/.kube/config through sudo.
	Kubeconfig string `json:"kubeconfig"`
}

// Proxy is the proxy the nodes use to reach package mirrors.
type Proxy struct {
	HTTPProxy   string `json:"http_proxy"`
	HTTPSProxy  string `json:"https_proxy"`
	NoProxy     string `json:"no_proxy"`
	K8sNodeCIDR string `json:"k8s_node_cidr"`
}

// StorageServer is the NFS server VM with its Cinder volumes.
type StorageServer struct {
	SSHCPName string `json:"ssh_cp_name"`
	// NICCPName is the CP of the server's internal NIC, by which a heal
	// recognises the storage server's VNFC. Optional: the PV spec's table
	// and sample body have none (the user guide's have), and Tacker's driver
	// sets the server up through ssh_cp_name alone. Parse sets it to
	// SSHCPName when it is missing.
	NICCPName               string         `json:"nic_cp_name"`
	Username                string         `json:"username"`
	Password                string         `json:"password"`
	CinderVolumeSetupParams []CinderVolume `json:"cinder_volume_setup_params"`
	NFSServerSetupParams    []NFSExport    `json:"nfs_server_setup_params"`
	// NFSServerImpl selects the NFS server: "kernel" (default,
	// nfs-kernel-server) or "ganesha" (nfs-ganesha). heatsible extension.
	NFSServerImpl string `json:"nfs_server_impl"`
	// VolumeIdentification says how the storage server finds each Cinder
	// volume's disk (heatsible extension): "by_id" (default) only through
	// the names udev derives from the volume id
	// (/dev/disk/by-id/virtio-<id[:20]>, scsi-0QEMU_QEMU_HARDDISK_<id>, ...);
	// "device_name" also trusts the device name of Heat's attachment
	// (/dev/vdb), for platforms whose disks carry no serial. Device names
	// follow attach order, so with "device_name" a blank disk reachable
	// only through that name is formatted.
	VolumeIdentification string `json:"volume_identification"`
}

// The values of StorageServer.VolumeIdentification.
const (
	VolumeByID         = "by_id"
	VolumeByDeviceName = "device_name"
)

// CinderVolume is one entry of cinder_volume_setup_params.
type CinderVolume struct {
	// VolumeResourceID is the Heat resource name of the OS::Cinder::Volume.
	VolumeResourceID string `json:"volume_resource_id"`
	MountTo          string `json:"mount_to"`
}

// NFSExport is one entry of nfs_server_setup_params.
type NFSExport struct {
	ExportDir string `json:"export_dir"`
	// ExportTo is an IP address, a CIDR or a host name.
	ExportTo string `json:"export_to"`
	// ExportOptions overrides the default export options (heatsible
	// extension), e.g. "rw,sync,no_subtree_check,root_squash".
	ExportOptions string `json:"export_options"`
}

// PVRegistration is one entry of pv_registration_params.
type PVRegistration struct {
	// PVManifestFilePath is relative to the VNF package directory.
	PVManifestFilePath string `json:"pv_manifest_file_path"`
	// NFSServerCP names the CP whose address replaces spec.nfs.server.
	// Required for an NFS PersistentVolume; a CSI one (e.g. Manila's) has
	// no NFS server to point at and may leave it out.
	NFSServerCP string `json:"nfs_server_cp"`
}

// Ansible is the pre-built Ansible host.
type Ansible struct {
	// IPAddress, Username and Password reach the Ansible host over SSH.
	IPAddress string `json:"ip_address"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	// KubesprayRootPath is the kubespray checkout on the Ansible host
	// (absolute); heatsible drives kubespray only when it is set.
	KubesprayRootPath string `json:"kubespray_root_path"`
	// TransferringInventoryPath is where the inventory for kubespray goes:
	// see InventoryFile for every form it takes.
	TransferringInventoryPath string `json:"transferring_inventory_path"`
	// AnsiblePlaybook (heatsible's) is the ansible-playbook that runs
	// heatsible's roles: a command name in PATH (default
	// "ansible-playbook"), or an absolute path of it or of its virtualenv
	// (CheckAnsiblePlaybook).
	AnsiblePlaybook string `json:"ansible_playbook,omitempty"`
	// KubesprayAnsiblePlaybook (heatsible's) is the one that runs
	// kubespray's playbooks; unset, kubespray's virtualenv under
	// kubespray_root_path if it has one, else ansible-playbook in PATH.
	KubesprayAnsiblePlaybook string `json:"kubespray_ansible_playbook,omitempty"`
}

// ExternalLB is the external load balancer VM in front of the masters.
type ExternalLB struct {
	SSHCPName   string `json:"ssh_cp_name"`
	SSHUsername string `json:"ssh_username"`
	SSHPassword string `json:"ssh_password"`
	ScriptPath  string `json:"script_path"`
}
