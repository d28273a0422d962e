package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
)

func newPlan(g *globals) *cobra.Command {
	var in inputs
	o := lcm.PlanOptions{}
	var tags string
	var tf targetFlags
	var waits []string
	cmd := &cobra.Command{
		Use:   "plan OPERATION [--storage-server | --cluster | --node NAME | --vnfc-resource-id ID | --nodes A,B] --request FILE [--package DIR] (--stack ID|NAME | --topology FILE) [--limit NODES] [--tags ROLES]",
		Short: "Print the steps an operation would run, on which hosts, with which roles (connects to no node)",
		Long: `plan prints what 'heatsible run' would do, without doing it: the ordered
steps (the plays of the operation's playbook), the hosts each one runs on
(resolved from the inventory's groups, narrowed by --limit) and its roles
(narrowed by --tags).

It renders the very playbook and inventory that 'run' would stage and reads
them back, so it cannot drift from what 'run' does. It connects to no node and
no Ansible host; with --topology it does not even read Heat.

What each role would change on each host is another question: ask it with
'heatsible run OPERATION --check --report FILE'.

Last, it lists the titles of run's own steps, in order (the locks, the
bundle, the connection, one step per phase above, the VIM, the release).

With -o json, stdout gets one JSON document (operation, cluster, steps with
pattern, hosts, roles, runs/skip; run: the titles of run's steps).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Operation = args[0]
			op, err := tf.op(o.Operation)
			if err != nil {
				return err
			}
			o.Target, o.Nodes, o.DeleteReleased = op.Target, op.Nodes, op.DeleteReleased
			req, err := in.loadRequest(g, true)
			if err != nil {
				return err
			}
			o.Request, o.PackageDir, o.Source = req, in.pkg, in.source()
			if tags != "" {
				o.Tags = strings.Split(tags, ",")
			}
			if o.Waits, err = lcm.ParseWaits(waits); err != nil {
				return fail.With(fail.Invalid, err)
			}
			o.Version = versionString()
			p, err := lcm.MakePlan(cmd.Context(), o)
			if err != nil {
				return err
			}
			if g.json() {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			writePlan(g.stdout, p, in.source())
			return nil
		},
	}
	in.addRequest(cmd)
	in.addPackage(cmd)
	in.addKubeconfig(cmd)
	in.addSource(cmd)
	f := cmd.Flags()
	tf.add(cmd, ", as for run")
	f.StringVar(&tags, "tags", "", "only these roles (comma-separated), as 'run --tags'")
	f.StringVar(&o.Limit, "limit", "", "only these nodes or groups (Ansible --limit pattern; @FILE is read on this machine, one pattern per line), as 'run --limit'")
	addWaitFlag(f, &waits, " (plan notes the bounds set)")
	addAnsibleFlags(f, &o.Ansible)
	return cmd
}

// writePlan prints a plan for a human.
func writePlan(w io.Writer, p *lcm.Plan, src lcm.Source) {
	// The cluster name, the file and the stack are validated or the
	// operator's own, but printed through redact.Terminal all the same.
	from := "topology file " + src.TopologyFile + "; nothing was contacted"
	if src.Stack != "" {
		from = "Heat stack " + src.Stack + " (read); no node was contacted"
	}
	fmt.Fprintf(w, "%s on cluster %s (%s)\n", p.Operation, redact.Terminal(p.Cluster), redact.Terminal(from))
	if p.Limit != "" {
		fmt.Fprintf(w, "--limit %s\n", redact.Terminal(p.Limit))
	}
	if len(p.Tags) > 0 {
		fmt.Fprintf(w, "--tags %s\n", strings.Join(p.Tags, ","))
	}
	runs := 0
	for _, s := range p.Steps {
		fmt.Fprintf(w, "\n%d. %s\n", s.Number, s.Name)
		if s.Kind != "" && s.Import == "" {
			fmt.Fprintf(w, "   on:     the machine that runs Ansible\n")
			if !s.Runs {
				fmt.Fprintf(w, "   skipped: %s\n", s.Skip)
				continue
			}
			runs++
			continue
		}
		if s.Kind == lcm.PhaseKubespray {
			fmt.Fprintf(w, "   runs:   %s with kubespray's ansible.cfg and the inventory above; its plays choose their hosts\n", s.Import)
			if len(s.Hosts) > 0 {
				fmt.Fprintf(w, "   nodes:  %s\n", strings.Join(s.Hosts, ", "))
			}
			if !s.Runs {
				fmt.Fprintf(w, "   skipped: %s\n", s.Skip)
				continue
			}
			runs++
			continue
		}
		if s.Import != "" {
			fmt.Fprintf(w, "   imports: %s (its plays choose their own hosts)\n", s.Import)
			runs++
			continue
		}
		hosts := strings.Join(s.Hosts, ", ")
		if hosts == "" {
			hosts = "(none)"
		}
		fmt.Fprintf(w, "   hosts:  %s  [%s]\n", hosts, s.Pattern)
		if len(s.Roles) > 0 {
			var rs []string
			for _, r := range s.Roles {
				if r.Selected {
					rs = append(rs, r.Name)
				} else {
					rs = append(rs, r.Name+" (not in --tags)")
				}
			}
			fmt.Fprintf(w, "   roles:  %s\n", strings.Join(rs, ", "))
		}
		for _, t := range s.Tasks {
			fmt.Fprintf(w, "   task:   %s\n", t)
		}
		if !s.Runs {
			fmt.Fprintf(w, "   skipped: %s\n", s.Skip)
			continue
		}
		runs++
	}
	hostList := ""
	if len(p.Hosts) > 0 {
		hostList = ": " + strings.Join(p.Hosts, ", ")
	}
	fmt.Fprintf(w, "\n%d of %d steps run, on %d hosts%s\n", runs, len(p.Steps), len(p.Hosts), hostList)
	for _, warning := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", redact.Terminal(warning))
	}
	for _, note := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", redact.Terminal(note))
	}
	if k := p.Kubespray; k != nil {
		writeKubespray(w, k)
	}
	if v := p.VIM; v != nil {
		fmt.Fprintf(w, "\nTacker's Kubernetes VIM (k8s_vim): server %s\n   host: %s\n   port: %s\n", v, v.HostFrom, v.PortFrom)
		if v.Note != "" {
			fmt.Fprintf(w, "   note: %s\n", v.Note)
		}
	}
	writeAnsibles(w, p.Ansible)
	writeRunSteps(w, p.Run)
}

// writeRunSteps prints the steps of 'heatsible run', the plays and phases
// above among them.
func writeRunSteps(w io.Writer, steps []string) {
	fmt.Fprintf(w, "\nheatsible run's steps (with --local, the two on the Ansible host are left out):\n")
	for i, s := range steps {
		fmt.Fprintf(w, "   %d. %s\n", i+1, s)
	}
}

// writeAnsibles prints which ansible-playbook runs heatsible's roles and
// which runs kubespray, and what the run checks of each on connecting.
func writeAnsibles(w io.Writer, as []lcm.AnsiblePlan) {
	if len(as) == 0 {
		return
	}
	fmt.Fprintf(w, "\nansible-playbook (found and checked on connecting, before anything changes; exit code 2 if unsupported):\n")
	for _, a := range as {
		what := "heatsible's roles"
		if a.For == "kubespray" {
			what = "kubespray"
		}
		fmt.Fprintf(w, "   %s: %s [%s]\n      checked: %s\n", what, a.Looks, a.From, a.Checks)
	}
}

// addAnsibleFlags adds the flags that say which ansible-playbook runs
// heatsible's roles and which runs kubespray.
func addAnsibleFlags(f *pflag.FlagSet, s *lcm.AnsibleSettings) {
	f.StringVar(&s.Roles, "ansible-playbook", "", "the ansible-playbook that runs heatsible's roles where Ansible runs: a name in PATH, or an absolute path of it or of its virtualenv (overrides the request's ansible.ansible_playbook; default ansible-playbook in PATH)")
	f.StringVar(&s.Kubespray, "kubespray-ansible-playbook", "", "the ansible-playbook that runs kubespray, as --ansible-playbook (overrides ansible.kubespray_ansible_playbook; default: kubespray's virtualenv under kubespray_root_path, else ansible-playbook in PATH)")
}

// writeKubespray prints what the kubespray steps get: the inventory and the
// variables (secrets masked), so that a reviewer sees them before the run.
func writeKubespray(w io.Writer, k *lcm.KubesprayPlan) {
	fmt.Fprintf(w, "\nkubespray (root %s) gets in every kubespray step:\n", k.Root)
	fmt.Fprintf(w, "   inventory: -i %s (%s, mode 0600; passwords only as references to the vars file)\n", k.Inventory, strings.ToUpper(k.InventoryFormat))
	fmt.Fprintf(w, "   vars:      -e @%s (mode 0600, in the run bundle): the masters' and workers' passwords, and from the request (secrets masked):\n", k.VarsFile)
	if len(k.Vars) == 0 {
		fmt.Fprintf(w, "      nothing: kubespray's defaults and the inventory's group_vars apply\n")
		return
	}
	keys := make([]string, 0, len(k.Vars))
	for name := range k.Vars {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	for _, name := range keys {
		v := k.Vars[name]
		if l, ok := v.([]string); ok {
			v = "[" + strings.Join(l, ", ") + "]"
		}
		fmt.Fprintf(w, "      %s: %v\n", name, v)
	}
}
