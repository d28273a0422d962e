package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
	review "github.com/heatsible/heatsible/internal/report"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/roles"
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
				if st, err := os.Stat(filepath.Dir(reportFile)); err != nil || !st.IsDir() {
					return fail.With(fail.Invalid, fmt.Errorf("--report %s: no directory %s to write it in", reportFile, filepath.Dir(reportFile)))
				}
			}
			if vimInfo != "" {
				if err := checkVIMInfo(vimInfo, op); err != nil {
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
				if err := checkRoles(o.Tags); err != nil {
					return err
				}
			}
			if o.Waits, err = lcm.ParseWaits(waits); err != nil {
				return fail.With(fail.Invalid, err)
			}
			o.Version = versionString()
			p := newProgress(g)
			// Events come masked; this masker covers what heatsible itself
			// prints at the end (the -o json document, the report file).
			p.mask = redact.New(lcm.RequestSecrets(req)...)
			o.OnEvent = p.event
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
				p.mask = redact.New(append(lcm.RequestSecrets(req), out.VIM.BearerToken)...)
				if err == nil {
					p.vim = out.VIM
				}
			}
			if vimInfo != "" && err == nil {
				err = writeVIMInfo(g, vimInfo, out)
			}
			var rep *review.Report
			if out != nil && (o.Check || reportFile != "") {
				rep = review.Build(review.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: out.Check,
					Limit: o.Limit, Tags: o.Tags, Result: out.Result, Err: err})
			}
			p.finish(out, err, rep)
			if reportFile != "" && rep != nil {
				if werr := writeReport(reportFile, rep, p.mask); werr != nil {
					werr = fmt.Errorf("writing the review report: %w", werr)
					if err == nil {
						return fail.With(fail.Internal, fmt.Errorf("%w (log: %s)", werr, filepath.Join(out.Record, state.RunLog)))
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

// progress prints events as they arrive and the recap at the end.
type progress struct {
	g     *globals
	color bool
	task  string
	mask  *redact.Masker
	// vim goes into -o json's document as "vim", after the masking.
	vim *lcm.VIM
}

func newProgress(g *globals) *progress {
	color := false
	if f, ok := g.stderr.(*os.File); ok && !g.json() && os.Getenv("NO_COLOR") == "" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			color = true
		}
	}
	return &progress{g: g, color: color}
}

var statusColor = map[ansible.Status]string{
	ansible.StatusOK: "32", ansible.StatusChanged: "33", ansible.StatusFailed: "31",
	ansible.StatusUnreachable: "31", ansible.StatusSkipped: "36",
}

func (p *progress) paint(s ansible.Status, text string) string {
	if !p.color {
		return text
	}
	return "\x1b[" + statusColor[s] + "m" + text + "\x1b[0m"
}

func (p *progress) event(e ansible.Event) {
	if p.g.json() && !p.g.verbose {
		return
	}
	w := p.g.stderr
	// What hosts send back (messages, file contents) is masked, then
	// escaped for the terminal (redact.Terminal): only heatsible's own
	// colour codes reach it as they are.
	show := func(s string) string { return redact.Terminal(p.mask.Mask(s)) }
	switch e.Kind {
	case ansible.KindPlayStart:
		fmt.Fprintf(w, "== %s\n", show(e.Play))
	case ansible.KindResult:
		if e.Status == ansible.StatusSkipped && !p.g.verbose {
			return
		}
		line := fmt.Sprintf("  %-24s %-11s %s", show(e.Host), p.paint(e.Status, string(e.Status)), show(e.Task))
		report := e.Status == ansible.StatusFailed || e.Status == ansible.StatusUnreachable ||
			strings.HasSuffix(e.Action, "debug") // the roles' own reports, e.g. each PV's phase
		if report && e.Msg != "" {
			line += "\n      " + strings.ReplaceAll(show(strings.TrimSpace(e.Msg)), "\n", "\n      ")
		}
		fmt.Fprintln(w, line)
	}
}

func (p *progress) finish(out *lcm.RunOutcome, err error, rep *review.Report) {
	if out == nil {
		return
	}
	p.g.reported = true
	r := out.Result
	if r == nil { // an operation that ran no playbook (terminate-end)
		r = &ansible.Result{Recap: map[string]ansible.HostRecap{}}
	}
	hosts := make([]string, 0, len(r.Recap))
	for h := range r.Recap {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	changed, changedHosts := 0, 0
	for _, h := range hosts {
		if c := r.Recap[h].Changed; c > 0 {
			changed += c
			changedHosts++
		}
	}
	status := "ok"
	if err != nil {
		status = "FAILED"
	}
	if p.g.json() {
		doc := map[string]any{
			"ok": err == nil, "exit_code": fail.Code(err), "operation": out.Operation, "cluster": out.Cluster,
			"where": out.Where, "check": out.Check,
			"recap": r.Recap, "changed": changed, "changed_hosts": changedHosts, "seconds": out.Duration.Seconds(),
			"record": out.Record,
		}
		if rep != nil {
			doc["report"] = rep
		}
		var buf bytes.Buffer
		if redact.EncodeJSON(&buf, doc, "  ") == nil {
			out := p.mask.MaskJSON(buf.Bytes())
			if p.vim != nil && err == nil {
				// The one place the token is printed: added after the
				// document was masked.
				if withVIM, werr := withKey(out, "vim", p.vim); werr == nil {
					out = withVIM
				}
			}
			p.g.stdout.Write(out)
		}
		return
	}
	w := tabwriter.NewWriter(p.g.stderr, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nHOST\tOK\tCHANGED\tFAILED\tUNREACHABLE\tSKIPPED")
	for _, h := range hosts {
		rc := r.Recap[h]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\n", h, rc.OK, rc.Changed, rc.Failed, rc.Unreachable, rc.Skipped)
	}
	w.Flush()
	fmt.Fprintf(p.g.stderr, "%s on %s (%s): %s in %s, %d changes on %d hosts\n",
		out.Operation, out.Cluster, out.Where, status, out.Duration.Round(100*time.Millisecond), changed, changedHosts)
	if err == nil && out.Record != "" {
		fmt.Fprintf(p.g.stderr, "heatsible: run record: %s\n", out.Record)
	}
}

// writeReport writes the review report: JSON if the file name ends in
// .json, else Markdown. Mode 0644: a report is for sharing, and it holds no
// secret (it is made from masked events only; internal/report tests it),
// which mask checks once more on the text as written.
func writeReport(name string, rep *review.Report, mask *redact.Masker) error {
	var buf bytes.Buffer
	var data []byte
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if err := rep.WriteJSON(&buf); err != nil {
			return err
		}
		data = mask.MaskJSON(buf.Bytes())
	} else {
		if err := rep.WriteMarkdown(&buf); err != nil {
			return err
		}
		// For people, who read it with cat and less: escaped like stderr.
		data = []byte(redact.Terminal(mask.Mask(buf.String())))
	}
	// Not through a link someone planted at the name: a temporary file
	// created exclusively, renamed over it.
	return ansible.WriteFileAtomic(name, data, 0o644)
}

// checkRoles refuses a --tags/--role value that is not an embedded role: a
// misspelt tag would make Ansible run nothing and report success.
func checkRoles(names []string) error {
	for _, n := range names {
		if !slices.Contains(roles.Names, n) {
			return fail.With(fail.Invalid, fmt.Errorf("--tags/--role %q: not a role; the roles are %s", n, strings.Join(roles.Names, ", ")))
		}
	}
	return nil
}

// checkVIMInfo refuses --vim-info where no VIM is prepared, and a file
// that could not be written.
func checkVIMInfo(name string, op lcm.Op) error {
	if op.Name != lcm.OpInstantiateEnd && !(op.Name == lcm.OpHealEnd && op.Target == lcm.TargetCluster) {
		return fail.With(fail.Invalid, fmt.Errorf("--vim-info: only instantiate-end and heal-end --cluster prepare Tacker's Kubernetes VIM, not %s", strings.TrimSpace(op.Name+" --"+op.Target)))
	}
	if st, err := os.Stat(filepath.Dir(name)); err != nil || !st.IsDir() {
		return fail.With(fail.Invalid, fmt.Errorf("--vim-info %s: no directory %s to write it in", name, filepath.Dir(name)))
	}
	if st, err := os.Lstat(name); err == nil && !st.Mode().IsRegular() {
		return fail.With(fail.Invalid, fmt.Errorf("--vim-info %s: exists and is not a regular file", name))
	}
	return nil
}

// writeVIMInfo writes the run's VIM to name, mode 0600 from its creation
// (a new file renamed over name). A run that prepared no VIM (check mode,
// --tags or --limit without k8s_vim) writes nothing and says so.
func writeVIMInfo(g *globals, name string, out *lcm.RunOutcome) error {
	if out == nil || out.VIM == nil {
		fmt.Fprintf(g.stderr, "heatsible: --vim-info %s not written: this run prepared no VIM (see above)\n", name)
		return nil
	}
	var buf bytes.Buffer
	if err := redact.EncodeJSON(&buf, out.VIM, "  "); err != nil {
		return fail.With(fail.Internal, fmt.Errorf("writing --vim-info %s: %w", name, err))
	}
	werr := func() error {
		f, err := os.CreateTemp(filepath.Dir(name), ".heatsible-vim-*")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return err
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return os.Rename(f.Name(), name)
	}()
	if werr != nil {
		return fail.With(fail.Internal, fmt.Errorf("writing --vim-info %s: %v; the VIM was prepared: re-run the operation to write it (nothing changes) (log: %s)", name, werr, filepath.Join(out.Record, state.RunLog)))
	}
	if !g.json() {
		fmt.Fprintf(g.stderr, "heatsible: Tacker's Kubernetes VIM (server, CA, token) written to %s (mode 0600)\n", name)
	}
	return nil
}

// withKey returns the JSON object doc with key set to v, indented as the
// -o json document is.
func withKey(doc []byte, key string, v any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	b, err := redact.Marshal(v)
	if err != nil {
		return nil, err
	}
	m[key] = b
	var buf bytes.Buffer
	if err := redact.EncodeJSON(&buf, m, "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
