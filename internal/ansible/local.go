package ansible

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apenella/go-ansible/v2/pkg/execute"
	"github.com/apenella/go-ansible/v2/pkg/execute/exec"
	"github.com/apenella/go-ansible/v2/pkg/playbook"

	"github.com/heatsible/heatsible/internal/interrupt"
)

// killGrace is how long ansible-playbook gets between SIGTERM and SIGKILL
// when a run is cancelled.
const killGrace = 10 * time.Second

// LocalRunner runs ansible-playbook on this machine through go-ansible's
// DefaultExecute.
type LocalRunner struct{}

// Run implements Runner. The bundle runs where it is (b.Dir).
func (LocalRunner) Run(ctx context.Context, b *Bundle, opts PlaybookOptions) (*Result, error) {
	argv, err := Command(b, b.Dir, opts)
	if err != nil {
		return nil, err
	}
	if err := checkCollect(b, opts.Collect); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir = b.Dir
	}
	if _, err := osexec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("running %s: %w", argv[0], err)
	}
	r := newRun(b, argv, dir, opts)
	px := &procExec{dir: dir, env: append(withVenvPath(cleanEnv(os.Environ()), opts.Venv), runEnv(b, b.Dir, opts)...)}

	// Hand DefaultExecute exactly the argv Command built and checked.
	exe := execute.NewDefaultExecute(
		execute.WithCmd(fixedCommand(argv)),
		execute.WithExecutable(px),
		execute.WithWrite(r.out),
		execute.WithWriteError(r.errw),
		execute.WithErrorEnrich(playbook.NewAnsiblePlaybookErrorEnrich()),
	)
	opts.logger().Debug("running ansible-playbook", "dir", dir, "argv", strings.Join(argv, " "))
	// An exit at once (a second signal) must not leave Ansible configuring
	// the nodes unattended: it kills the process group.
	running := interrupt.Track(ctx, interrupt.Leftover{Now: px.kill})
	execErr := exe.Execute(ctx)
	code := px.wait()
	running()
	res := r.finish(code)
	res.Collected = collectLocal(b.Dir, opts.Collect)

	if ctx.Err() != nil {
		return res, fmt.Errorf("ansible-playbook cancelled: %w", ctx.Err())
	}
	if code < 0 {
		return res, fmt.Errorf("running ansible-playbook: %w", execErr)
	}
	return res, res.Err()
}

// fixedCommand hands DefaultExecute a prepared argv.
type fixedCommand []string

func (c fixedCommand) Command() ([]string, error) { return c, nil }
func (c fixedCommand) String() string             { return strings.Join(c, " ") }

// procExec is go-ansible's Executabler for our process: working directory,
// clean environment (cleanEnv, runEnv), stdin from /dev/null (no prompt can ever wait for
// an answer), its own process group so that cancel reaches ansible's
// workers and ssh children, SIGTERM then SIGKILL.
//
// It returns a wrapper rather than *exec.Cmd so that DefaultExecute does
// not override Dir/Env/Stdin with its own defaults (os.Stdin).
type procExec struct {
	dir string
	env []string

	mu     sync.Mutex
	cmd    *osexec.Cmd
	waited chan struct{}
	code   int
}

func (p *procExec) Command(name string, arg ...string) exec.Cmder {
	return p.CommandContext(context.Background(), name, arg...)
}

// groupGuard runs its arguments as a child and, on SIGTERM, SIGINT or
// SIGHUP, sends SIGTERM to its whole process group (which it leads): that
// is how the kernel's parent-death signal (Pdeathsig, below) reaches
// Ansible's workers and the commands they run, which ansible-playbook's
// own death would leave running. Its exit status is ansible-playbook's.
const groupGuard = `trap 'trap - TERM INT HUP; kill -TERM 0 2>/dev/null' TERM INT HUP
"$@" &
wait $!`

func (p *procExec) CommandContext(ctx context.Context, name string, arg ...string) exec.Cmder {
	c := osexec.CommandContext(ctx, "/bin/sh", append([]string{"-c", groupGuard, "sh", name}, arg...)...)
	c.Dir = p.dir
	c.Env = p.env
	c.Stdin = nil
	// Its own process group, so that a cancel reaches Ansible's workers and
	// their ssh; and SIGTERM to groupGuard when heatsible dies (SIGKILL, a
	// crash), so that Ansible never goes on configuring the nodes without
	// anyone watching. (The kernel sends it when the thread that started
	// the process ends; Go does not end its threads unless a goroutine
	// locked to one exits, so that is when heatsible ends.)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	c.Cancel = func() error {
		pid := c.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		go func() {
			select {
			case <-p.waitedCh():
			case <-time.After(killGrace):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}()
		return nil
	}
	p.mu.Lock()
	p.cmd = c
	p.waited = make(chan struct{})
	p.code = -1
	p.mu.Unlock()
	return &procCmd{Cmd: exec.NewCmd(c), p: p, c: c}
}

// kill is the exit at once: SIGKILL to the process group, if it runs.
func (p *procExec) kill() string {
	p.mu.Lock()
	c, waited := p.cmd, p.waited
	p.mu.Unlock()
	if c == nil || c.Process == nil {
		return ""
	}
	select {
	case <-waited:
		return ""
	default:
	}
	pid := c.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Sprintf("left behind: ansible-playbook (pid %d) on this machine: killing its process group: %v", pid, err)
	}
	return fmt.Sprintf("stopped: ansible-playbook (pid %d) on this machine and its process group, with SIGKILL", pid)
}

func (p *procExec) waitedCh() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waited
}

// wait reaps the process if DefaultExecute did not (it returns early when
// the context ends) and returns the exit code (-1 if it never ran).
func (p *procExec) wait() int {
	p.mu.Lock()
	c, waited := p.cmd, p.waited
	p.mu.Unlock()
	if c == nil || c.Process == nil {
		return -1
	}
	select {
	case <-waited:
	default:
		_ = c.Wait()
		p.markWaited(c)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

func (p *procExec) markWaited(c *osexec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.waited:
		return
	default:
	}
	if c.ProcessState != nil {
		p.code = c.ProcessState.ExitCode() // -1 if killed by a signal
	}
	close(p.waited)
}

// procCmd records the exit of the wrapped command.
type procCmd struct {
	*exec.Cmd
	p *procExec
	c *osexec.Cmd
}

// Wait returns nil or an *exec.ExitError, nothing else: go-ansible's
// DefaultExecute.Execute type-asserts a failed Wait's error to
// *exec.ExitError (a panic otherwise). That contract, kept here, is what
// lets heatsible call Execute without a recover(). The run's exit code is
// read from the process itself (procExec.wait), never from this error.
func (pc *procCmd) Wait() error {
	err := pc.Cmd.Wait()
	pc.p.markWaited(pc.c)
	if err == nil {
		return nil
	}
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return ee
	}
	return &osexec.ExitError{ProcessState: pc.c.ProcessState}
}

// collectLocal reads (then removes) the files of rels the run wrote under
// dir: a file the bundle no longer needs holds nothing for whoever finds
// the bundle left behind.
func collectLocal(dir string, rels []string) map[string][]byte {
	var out map[string][]byte
	for _, rel := range rels {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > MaxCollect {
			continue
		}
		data, err := os.ReadFile(p)
		_ = os.Remove(p)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string][]byte{}
		}
		out[rel] = data
	}
	return out
}
