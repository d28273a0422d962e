package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
)

func newValidate(g *globals) *cobra.Command {
	var in inputs
	var tags string
	cmd := &cobra.Command{
		Use:   "validate --request FILE [--package DIR] [--tags ROLES]",
		Short: "Check an instantiate request without touching anything",
		Long: `validate reads the instantiate request and reports every problem at once, each
with its JSON path and how to fix it. It connects to nothing.

With --package it also checks that every PV manifest exists inside the VNF
package directory and holds exactly one PersistentVolume (nfs or csi source),
and that the external load balancer's script follows one of the two
interfaces heatsible drives (docs/external-lb.md); without it, these paths
are only checked for form.

The request is checked for a whole instantiate-end (what the Tacker shims
run, no --tags): a script_path (Tacker's Kubernetes installation script,
which heatsible does not run) is refused unless kubespray installs the
cluster. --tags ROLES checks it for a run with those --tags instead (the
Tacker shim's kubeadm variant), where script_path is only noted.

Exit 0 if the request is valid, 2 with every problem on stderr otherwise.
Unknown fields are reported as warnings and do not fail validation.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tags != "" {
				if err := lcm.CheckRoles(strings.Split(tags, ",")); err != nil {
					return err
				}
			}
			in.wholeRun = tags == ""
			req, err := in.loadRequest(g, false)
			if err != nil {
				return err
			}
			note := ""
			if in.pkg == "" && req.NeedsPackage() {
				note = "package files not checked: pass --package DIR to check the PV manifests and the load-balancer script"
			}
			if g.json() {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				warnings := []string{}
				for _, w := range req.Warnings {
					warnings = append(warnings, redact.Terminal(w))
				}
				notes := []string{}
				for _, n := range req.Notes() {
					notes = append(notes, redact.Terminal(n))
				}
				return enc.Encode(map[string]any{"ok": true, "warnings": warnings, "note": note, "notes": notes})
			}
			if note != "" {
				fmt.Fprintf(g.stderr, "heatsible: note: %s\n", note)
			}
			for _, n := range req.Notes() {
				fmt.Fprintf(g.stderr, "heatsible: note: %s\n", redact.Terminal(n))
			}
			fmt.Fprintln(g.stdout, "valid")
			return nil
		},
	}
	in.addRequest(cmd)
	in.addPackage(cmd)
	cmd.Flags().StringVar(&tags, "tags", "", "check the request for a run with these --tags (comma-separated roles), as the Tacker shim's kubeadm variant runs heatsible: script_path is then noted, not refused")
	return cmd
}
