package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
)

func newRun(g *globals) *cobra.Command {
	var in inputs
	o := lcm.RunOptions{}
	var tags, role string
	var tf targetFlags
	var reportFile, vimInfo string
	var waits []string
	cmd := &cobra.Command{
		Use:   "run OPERATION --request FILE [--package DIR] (--stack ID|NAME | --topology FILE) [--local | --ansible-host ADDR] [TARGET]",
		Short: "Run a lifecycle operation on the cluster (instantiate-end, heal-start, heal-end, scale-start, scale-end, terminate-end)",
		Long: `run performs a VNF lifecycle operation on the cluster's VMs with Ansible.

Operations:
  instantiate-end   with kubespray (ansible.kubespray_root_path): write its
                    inventory and run cluster.yml first. Then on the storage
                    server: find the Cinder volume, create ext4 only if it has
                    no file system, mount it (and record it in fstab), create
                    and export the directories over NFS, and verify the
                    exports; install the NFS client on every master and
                    worker; register the PersistentVolumes (spec.nfs.server
                    set to the storage server's address) and wait until they
                    are Available; with external_lb_param, install the load
                    balancer with its script and route to every worker.
                    Last, Tacker's Kubernetes VIM (role k8s_vim, on the first
                    master): ServiceAccount kube-system/heatsible-tacker-vim
                    bound to cluster-admin and a long-lived token Secret for
                    it, created once and kept; the server (cluster_cp_name's
                    address and the admin kubeconfig's port), the cluster CA
                    and the token are printed in -o json's "vim" and written
                    to --vim-info FILE (0600), nowhere else.
  heal-start --storage-server
                    before the storage server VM is replaced: unregister the
                    PVs heatsible registered. Refused (exit 6), with nothing
                    deleted, while any of them is Bound, naming each PV and its
                    claim (namespace/name). A Released PV (its claim is gone but
                    its data is still on the export) is refused too until you
                    acknowledge it with --delete-released.
  heal-end --storage-server
                    after the storage server VM was replaced: cinder_volume and
                    nfs_server on the new server (a volume that has a file
                    system is mounted as it is, never formatted), then the PVs
                    registered again with the server's address as Heat gives
                    it now.
  heal-start --cluster
                    before the whole cluster is replaced: as terminate-end.
  heal-end --cluster
                    after the whole cluster was replaced: instantiate-end on
                    the new VMs (Tacker's Kubernetes VIM included).
  heal-start --node NAME | --vnfc-resource-id ID
                    before one node's VM is replaced: remove its load-balancer
                    route, drain it (kubectl drain --ignore-daemonsets
                    --delete-emptydir-data, bounded), then kubespray
                    remove-node.yml -e node=NAME -e skip_confirmation=true
                    -e reset_nodes=false (the VM may be dead) and the
                    inventory without it; without kubespray, check that
                    heal-end can join it again (kubeadm, a kubelet), then
                    delete its Node object, or refuse (exit 6). A master only
                    with kubespray, three or more masters, and not the first
                    one; otherwise refused (exit 2; without kubespray, 6).
  heal-end --node NAME | --vnfc-resource-id ID
                    after the VM was replaced: the inventory, kubespray
                    facts.yml then scale.yml --limit=NAME (a master:
                    cluster.yml --limit=etcd,kube_control_plane), the NFS
                    client on it, its load-balancer route; without kubespray,
                    kubeadm join first (refused, exit 6, when it cannot).
  scale-start --nodes A,B
                    before workers are removed (scale-in): remove their
                    load-balancer routes, drain them, kubespray remove-node.yml
                    non-interactively (skip_confirmation; never a typed "yes"),
                    the inventory without them; without kubespray, delete their
                    Node objects.
  scale-end --nodes A,B
                    after workers were added (scale-out): the inventory,
                    kubespray facts.yml on all nodes then scale.yml --limit
                    to the new ones (without kubespray: kubeadm join), the
                    NFS client on them, their load-balancer routes.
  terminate-end     remove heatsible's state for the cluster: staging
                    directories earlier runs left on the Ansible host, the
                    inventory it wrote for kubespray (only that file), and the
                    cluster's lock files, here and on the Ansible host. Run
                    records stay.

Nodes (--node, --nodes) are named by node name (as 'heatsible inventory'
prints), Heat member resource name (how Tacker names scale-in victims), the
member's nested stack id (how Tacker names new members) or Nova server id
(a VNFC resource id). 'heatsible plan OPERATION ...' shows every step first.

kubespray runs from kubespray_root_path with its own ansible.cfg, except that
heatsible keeps host key checking on (against --known-hosts) and reads its
results as JSON lines. In check mode, and with --tags/--role or --limit,
kubespray and the inventory it gets are left alone (the run says so).

Where Ansible runs: by default on the Ansible host of the request
(ansible.ip_address, ansible.username, ansible.password), reached over SSH; the
run bundle is uploaded to a private directory there and removed afterwards,
also after a failure or Ctrl-C. --ansible-host overrides the address; --local
runs ansible-playbook on this machine instead.

Host keys: every SSH connection (to the Ansible host, and Ansible's to each
node) is verified against --known-hosts (default ~/.ssh/known_hosts).
--insecure-ignore-host-key turns that off for the Ansible host only, loudly.

Passwords reach Ansible only through a 0600 vars file inside the run bundle:
never the command line, the environment or the inventory.

Progress is printed as tasks finish, one line per host; a recap table ends the
run. With -o json, stdout gets one JSON document with the recap and the exit
code (and the review report, under "report", with --check or --report).
Exit codes are in 'heatsible --help'.

Review report: --report FILE writes what each task did (or, with --check,
would do) on each host, with the diff of every change, ending with
"N changes on M hosts would be made": Markdown, or JSON if FILE ends in
.json. Secrets are masked. See docs/dry-run-review.md.

Run records: every run, also a failed one, leaves a record in
STATE/runs/CLUSTER/TIMESTAMP-OPERATION/ (STATE: $HEATSIBLE_STATE_DIR, else
/var/lib/heatsible as root, else ~/.local/state/heatsible): run.log (0600,
every event as a JSON line, the recap, the error), report.md and the rendered
bundle with every secret masked. Errors end with "(log: PATH)". The last 20
records of each cluster are kept.

Waits: every wait of the roles is bounded, and a wait that runs out fails the
run (exit 4) with a message that names it. --wait NAME=DURATION (seconds, or
a duration such as 90s or 20m; repeatable or comma-separated) sets a bound
for a slower cloud. NAME, default, what it bounds:
` + lcm.WaitsHelp(),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			o.Operation = args[0]
			o.Source = in.source()
			// Every error ends with "(log: PATH)": those found before the
			// run starts get a record too.
			started := false
			defer func() {
				if !started {
					err = lcm.RecordFailure(o, interrupt.Err(cmd.Context(), err))
				}
			}()
			op, err := tf.op(o.Operation)
			if err != nil {
				return err
			}
			o.Target, o.Nodes, o.DeleteReleased = op.Target, op.Nodes, op.DeleteReleased
			if o.Local && o.AnsibleHost != "" {
				return fail.With(fail.Invalid, fmt.Errorf("give either --local or --ansible-host, not both"))
			}
			if reportFile != "" {
				if err := lcm.CheckReportFile(reportFile); err != nil {
					return err
				}
			}
			if vimInfo != "" {
				if err := lcm.CheckVIMInfo(vimInfo, op); err != nil {
					return err
				}
			}
			req, err := in.loadRequest(g, true)
			if err != nil {
				return err
			}
			o.Request, o.PackageDir, o.Source = req, in.pkg, in.source()
			if role != "" {
				if tags != "" {
					return fail.With(fail.Invalid, fmt.Errorf("give either --role or --tags, not both"))
				}
				tags = role
			}
			if tags != "" {
				o.Tags = strings.Split(tags, ",")
				if err := lcm.CheckRoles(o.Tags); err != nil {
					return err
				}
			}
			if o.Waits, err = lcm.ParseWaits(waits); err != nil {
				return fail.With(fail.Invalid, err)
			}
			o.Version = versionString()
			p := lcm.NewProgress(g.stdout, g.stderr, g.json(), g.verbose)
			// Events come masked; this masker covers what heatsible itself
			// prints at the end (the -o json document, the report file).
			p.Mask = redact.New(lcm.RequestSecrets(req)...)
			o.OnEvent = p.Event
			o.Stderr = g.stderr
			if g.verbose {
				o.Verbosity = 1
			}
			if g.debug {
				o.Verbosity = 3
			}
			fmt.Fprintf(g.stderr, "heatsible: %s: reading the cluster...\n", o.Operation)
			started = true
			out, err := lcm.Run(cmd.Context(), o)
			if out != nil && out.VIM != nil {
				// From here on, everything printed or written knows the
				// token; only -o json's "vim" and --vim-info carry it.
				p.Mask = redact.New(append(lcm.RequestSecrets(req), out.VIM.BearerToken)...)
				if err == nil {
					p.VIM = out.VIM
				}
			}
			if vimInfo != "" && err == nil {
				err = lcm.WriteVIMInfo(g.stderr, g.json(), vimInfo, out)
			}
			var rep *lcm.Report
			if o.Check || reportFile != "" {
				rep = lcm.ReviewReport(o, out, err)
			}
			p.Finish(out, err, rep)
			g.reported = g.reported || out != nil
			if reportFile != "" && rep != nil {
				if werr := lcm.WriteReport(reportFile, rep, p.Mask); werr != nil {
					werr = fmt.Errorf("writing the review report: %w", werr)
					if err == nil {
						return fail.With(fail.Internal, fmt.Errorf("%w (log: %s)", werr, lcm.RunLogPath(out.Record)))
					}
					fmt.Fprintf(g.stderr, "heatsible: %v\n", werr)
				} else if !g.json() {
					fmt.Fprintf(g.stderr, "heatsible: review report: %s (%s)\n", reportFile, rep.Summary)
				}
			}
			return err
		},
	}
	in.addRequest(cmd)
	in.addPackage(cmd)
	in.addKubeconfig(cmd)
	in.addSource(cmd)
	f := cmd.Flags()
	f.BoolVar(&o.Local, "local", false, "run ansible-playbook on this machine instead of the Ansible host")
	f.StringVar(&o.AnsibleHost, "ansible-host", "", "Ansible host address (overrides the request's ansible.ip_address)")
	f.StringSliceVar(&o.SSHKeyFiles, "ssh-key", nil, "private key file(s) for the Ansible host (besides the request's password)")
	f.BoolVar(&o.UseAgent, "ssh-agent", false, "offer the keys of the ssh-agent at $SSH_AUTH_SOCK to the Ansible host")
	f.StringVar(&o.KnownHosts, "known-hosts", "", "known_hosts file for the Ansible host and every node (default ~/.ssh/known_hosts)")
	f.BoolVar(&o.InsecureIgnoreHostKey, "insecure-ignore-host-key", false, "DANGEROUS: accept any host key from the Ansible host (lab use only)")
	tf.add(cmd, "")
	f.BoolVar(&o.Check, "check", false, "dry run: ansible-playbook --check --diff, nothing changes on any host")
	f.StringVar(&reportFile, "report", "", "write the review report (each host's tasks, the diffs, the summary) to FILE: Markdown, or JSON if FILE ends in .json")
	f.StringVar(&role, "role", "", "re-run one role only (cinder_volume, nfs_server, nfs_client, pv_register, external_lb, k8s_vim, k8s_node or k8s_join); the same as --tags ROLE")
	f.StringVar(&tags, "tags", "", "run only these roles (comma-separated, e.g. cinder_volume,nfs_server,nfs_client,pv_register; k8s_vim: Tacker's Kubernetes VIM)")
	f.StringVar(&o.Limit, "limit", "", "run only on these nodes or groups (Ansible --limit pattern; @FILE is read on this machine, one pattern per line)")
	f.StringVar(&vimInfo, "vim-info", "", "instantiate-end, heal-end --cluster: write Tacker's Kubernetes VIM (server, CA, bearer token; docs/hooks.md) to FILE, mode 0600, once the run succeeded")
	f.IntVar(&o.Forks, "forks", 0, "hosts Ansible works on at once (default 50)")
	addWaitFlag(f, &waits, "")
	addAnsibleFlags(f, &o.Ansible)
	f.BoolVar(&o.BreakLock, "break-lock", false, "take over the cluster lock left by a run that was killed or crashed (read its run record first); never breaks a live run's lock")
	return cmd
}
