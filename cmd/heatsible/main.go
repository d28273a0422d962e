// Command heatsible configures the storage (and optionally the kubespray)
// side of a Kubernetes cluster deployed as a VNF on OpenStack: it reads the
// cluster's Heat stack, builds an Ansible inventory and runs embedded roles on
// the cluster's VMs. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/interrupt"
	"github.com/heatsible/heatsible/internal/lcm"
)

func main() {
	// SIGINT, SIGTERM and SIGHUP: the first cancels the run (it stops
	// Ansible, cleans up, exits 130), a second exits at once, saying what
	// is left behind (package interrupt).
	ctx, h := interrupt.Notify(context.Background(), interrupt.Config{Stderr: os.Stderr})
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	h.Stop()
	os.Exit(code)
}

// globals are the flags every command has.
type globals struct {
	output  string
	verbose bool
	debug   bool
	stdout  io.Writer
	stderr  io.Writer
	// reported: run has printed its outcome (with -o json, a document
	// whose exit_code is the process's); a signal that comes after that
	// changes nothing.
	reported bool
}

func (g *globals) json() bool { return g.output == "json" }

// run is main without the process: tests call it.
//
// A panic is a bug: it is reported with exit code 1 (Internal), not Go's
// 2, which a hook would read as invalid input. The deferred cleanups of
// the run (bundle, staging directory, lock) have run by then. Once ctx is
// cancelled (a signal), the exit code is 130 whatever the command
// returned (interrupt.Err), unless run had printed its outcome before the
// signal came: then that outcome stands.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	g := &globals{stdout: stdout, stderr: stderr}
	defer func() {
		if p := recover(); p != nil {
			code = fail.Internal
			report(g, fmt.Errorf("internal error (a bug: please report it with this message): panic: %v\n%s", p, debug.Stack()), code)
		}
	}()
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if !g.reported {
		err = interrupt.Err(ctx, err)
	}
	if err == nil {
		return fail.OK
	}
	code = fail.Code(err)
	if code == fail.Internal && isUsageError(err) {
		code = fail.Invalid
	}
	report(g, err, code)
	return code
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "heatsible",
		Short: "NFS-backed PersistentVolumes for a Kubernetes VNF on OpenStack, from its Heat stack",
		Long: `heatsible reads a Kubernetes cluster VNF's OpenStack Heat stack (or a topology
file saved from it), builds an Ansible inventory, and runs embedded Ansible roles
on the cluster's VMs so the cluster gets NFS-backed PersistentVolumes:
a Cinder volume formatted (only if empty) and mounted on the storage server,
exported over NFS, the NFS client on every node, and the PVs registered.

Start here:
  heatsible validate  --request req.json --package ./pkg      check a request, touch nothing
  heatsible topology  --request req.json --stack my-vnf        see what Heat says (save it with --save)
  heatsible inventory --request req.json --topology topo.yaml  print the Ansible inventory

OpenStack credentials are read the usual way: OS_CLOUD with clouds.yaml, or OS_*
variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, ...).

Exit codes: 0 ok, 1 internal error, 2 invalid input, 3 host unreachable,
4 a task failed, 5 OpenStack/Heat error, 6 refused for safety, 130 interrupted.

Signals: SIGINT (Ctrl-C), SIGTERM or SIGHUP stops the run: Ansible is
stopped, the staging directory, bundle and lock are cleaned up, and the exit
code is 130 whatever the signal interrupted. A second one exits at once, with
130, and says what was left behind and where.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&g.output, "output", "o", "text", "output format: text, or json for hooks and scripts")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "say more about what is happening (skipped tasks, every role's report)")
	root.PersistentFlags().BoolVar(&g.debug, "debug", false, "also log heatsible's own steps (SSH, staging, commands run, with secrets masked) to stderr; implies -v")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if g.output != "text" && g.output != "json" {
			return fail.With(fail.Invalid, fmt.Errorf("--output %q: want text or json", g.output))
		}
		interrupt.SetJSON(cmd.Context(), g.json())
		if g.debug {
			g.verbose = true
			slog.SetDefault(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
		}
		return nil
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fail.With(fail.Invalid, err) })
	root.AddCommand(newValidate(g), newTopology(g), newInventory(g), newPlan(g), newRun(g), newVersion(g))
	return root
}

// report prints err on stderr (lcm.PrintError).
func report(g *globals, err error, code int) { lcm.PrintError(g.stderr, g.json(), err, code) }

func isUsageError(err error) bool {
	// cobra's own errors for unknown commands and missing required flags.
	msg := err.Error()
	for _, s := range []string{"unknown command", "unknown flag", "required flag", "accepts ", "invalid argument"} {
		if contains(msg, s) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	return len(sub) <= len(s) && (s[:len(sub)] == sub || contains(s[1:], sub))
}
