package lcm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/report"
	"github.com/heatsible/heatsible/internal/state"
	"github.com/heatsible/heatsible/roles"
)

// What the CLI (cmd/heatsible) asks of lcm besides Run and MakePlan: its
// flags become options and one call; the checks of its flags' files and
// values, the request's loading and the files a run writes at its end are
// here, so that the CLI imports no other package of heatsible's but fail,
// interrupt and redact. Its printing is in present.go.

// Report is a run's review report (package report), as the CLI holds it.
type Report = report.Report

// Request is the instantiate request (package params), as the CLI holds it.
type Request = params.Request

// RequestInput is what the CLI's flags say about the request.
type RequestInput struct {
	// Path is --request; PackageDir --package.
	Path, PackageDir string
	// RequirePackage: the operation reads package files (run, plan).
	RequirePackage bool
	// WholeRun: checked for a whole instantiate-end (params.Options.WholeRun).
	WholeRun bool
	// Kubeconfig is --kubeconfig: it overrides master_node.kubeconfig.
	Kubeconfig string
}

// LoadRequest reads and validates the request; every problem comes back at
// once as a fail.Invalid error. The request's warnings are written to
// warnings (heatsible: warning: ...), also when it is invalid.
func LoadRequest(in RequestInput, warnings io.Writer) (*params.Request, error) {
	req, err := params.Load(in.Path)
	if err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	if err := req.Validate(params.Options{PackageDir: in.PackageDir, RequirePackage: in.RequirePackage, WholeRun: in.WholeRun}); err != nil {
		warn(warnings, req)
		return nil, fail.With(fail.Invalid, err)
	}
	warn(warnings, req)
	if in.Kubeconfig != "" {
		if msg := params.KubeconfigProblem(in.Kubeconfig); msg != "" {
			return nil, fail.With(fail.Invalid, fmt.Errorf("--kubeconfig: %s", msg))
		}
		// Validate made sure master_node is there.
		req.Cluster.MasterNode.Kubeconfig = in.Kubeconfig
	}
	return req, nil
}

func warn(w io.Writer, req *params.Request) {
	for _, s := range req.Warnings {
		fmt.Fprintf(w, "heatsible: warning: %s\n", redact.Terminal(s))
	}
}

// CheckRoles refuses a --tags/--role value that is not an embedded role: a
// misspelt tag would make Ansible run nothing and report success.
func CheckRoles(names []string) error {
	for _, n := range names {
		if !slices.Contains(roles.Names, n) {
			return fail.With(fail.Invalid, fmt.Errorf("--tags/--role %q: not a role; the roles are %s", n, strings.Join(roles.Names, ", ")))
		}
	}
	return nil
}

// CheckReportFile refuses a --report FILE whose directory is not there.
func CheckReportFile(name string) error {
	if st, err := os.Stat(filepath.Dir(name)); err != nil || !st.IsDir() {
		return fail.With(fail.Invalid, fmt.Errorf("--report %s: no directory %s to write it in", name, filepath.Dir(name)))
	}
	return nil
}

// CheckVIMInfo refuses --vim-info where no VIM is prepared, and a file
// that could not be written.
func CheckVIMInfo(name string, op Op) error {
	if op.Name != OpInstantiateEnd && !(op.Name == OpHealEnd && op.Target == TargetCluster) {
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

// RunLogPath is the run log of the run record dir.
func RunLogPath(dir string) string { return filepath.Join(dir, state.RunLog) }

// WriteVIMInfo writes the run's VIM to name, mode 0600 from its creation
// (a new file renamed over name), and says so on stderr unless quiet. A
// run that prepared no VIM (check mode, --tags or --limit without k8s_vim)
// writes nothing and says so.
func WriteVIMInfo(stderr io.Writer, quiet bool, name string, out *RunOutcome) error {
	if out == nil || out.VIM == nil {
		fmt.Fprintf(stderr, "heatsible: --vim-info %s not written: this run prepared no VIM (see above)\n", name)
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
		return fail.With(fail.Internal, fmt.Errorf("writing --vim-info %s: %v; the VIM was prepared: re-run the operation to write it (nothing changes) (log: %s)", name, werr, RunLogPath(out.Record)))
	}
	if !quiet {
		fmt.Fprintf(stderr, "heatsible: Tacker's Kubernetes VIM (server, CA, token) written to %s (mode 0600)\n", name)
	}
	return nil
}

// ReviewReport is the review report of the run o that ended with out and
// err (nil: the run did not get as far as ansible-playbook).
func ReviewReport(o RunOptions, out *RunOutcome, err error) *report.Report {
	if out == nil {
		return nil
	}
	return report.Build(report.Input{Operation: out.Operation, Cluster: out.Cluster, Where: out.Where, Check: out.Check,
		Limit: o.Limit, Tags: o.Tags, Result: out.Result, Err: err})
}

// WriteReport writes the review report: JSON if the file name ends in
// .json, else Markdown. Mode 0644: a report is for sharing, and it holds no
// secret (it is made from masked events only; internal/report tests it),
// which mask checks once more on the text as written.
func WriteReport(name string, rep *report.Report, mask *redact.Masker) error {
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

// PrintError prints err for a human (or as JSON) on w. Every message is
// passed through redact.Terminal: the values in it are quoted where they
// were put in, and whatever slipped through unquoted still cannot drive
// the terminal or forge a line (in -o json too, for whoever prints it).
func PrintError(w io.Writer, asJSON bool, err error, code int) {
	var ps params.Problems
	hasProblems := errors.As(err, &ps)
	if asJSON {
		out := map[string]any{"ok": false, "exit_code": code, "error": redact.Terminal(err.Error())}
		if hasProblems {
			list := make([]map[string]string, len(ps))
			for i, p := range ps {
				list[i] = map[string]string{"path": redact.Terminal(p.Path), "message": redact.Terminal(p.Msg)}
			}
			out["problems"] = list
		}
		redact.EncodeJSON(w, out, "  ")
		return
	}
	if hasProblems {
		noun := "problems"
		if len(ps) == 1 {
			noun = "problem"
		}
		fmt.Fprintf(w, "heatsible: invalid input, %d %s (nothing was touched):\n", len(ps), noun)
		for _, p := range ps {
			fmt.Fprintf(w, "  %s\n", redact.Terminal(p.String()))
		}
		return
	}
	fmt.Fprintf(w, "heatsible: %s\n", redact.Terminal(err.Error()))
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
