package ansible

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
func (l LocalRunner) Run(ctx context.Context, b *Bundle, opts PlaybookOptions) (*Result, error) {
	res, err := l.run(ctx, b, opts)
	return res, refusal(res, err)
}

func (LocalRunner) run(ctx context.Context, b *Bundle, opts PlaybookOptions) (*Result, error) {
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
	px := &procExec{dir: dir, env: append(withVenvPath(cleanEnv(os.Environ()), opts.Venv), runEnv(b, b.Dir, opts)...), marker: b.Dir}

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
	// marker is in the command line of every process of the run (the
	// bundle's directory): see runProcs.
	marker string

	mu     sync.Mutex
	cmd    *osexec.Cmd
	waited chan struct{}
	code   int
}

func (p *procExec) Command(name string, arg ...string) exec.Cmder {
	return p.CommandContext(context.Background(), name, arg...)
}

// groupGuard runs its arguments as a child and, on SIGTERM, SIGINT or
// SIGHUP, stops the run (stopFunc): SIGTERM to its whole process group
// (which it leads) and to every process whose command line holds marker,
// the bundle's directory, with its group; SIGKILL to what is left after
// killGrace. That is how the kernel's parent-death signal (Pdeathsig,
// below) reaches Ansible's workers and the commands they run, which
// ansible-playbook's own death would leave running: ansible-core 2.19 puts
// each worker in a session of its own, and the ssh of a password login in
// another (SSH_ASKPASS, setsid), out of reach of any group; each names the
// bundle's directory in its command line (the playbook, ssh's
// UserKnownHostsFile). Its exit status is ansible-playbook's.
func groupGuard(marker string) string {
	return sweepFunc(marker) + stopFunc(int(killGrace/time.Second)) +
		"trap 'hs_stop; wait $run; exit $?' TERM INT HUP\n" +
		"\"$@\" &\n" +
		"run=$!\n" +
		"wait $run\n"
}

// stopFunc defines hs_stop, which stops a run whose processes hs_sweep
// finds: SIGTERM to this shell's process group and to each of them with its
// group, then SIGKILL to what is left after grace seconds, by the clock (a
// sweep reads all of /proc: on a busy host it takes longer than its pause).
// The shell ignores those signals from then on.
func stopFunc(grace int) string {
	return "hs_stop() {\n" +
		"  trap '' TERM INT HUP\n" +
		"  kill -TERM 0 2>/dev/null\n" +
		"  hs_sweep TERM\n" +
		"  end=$(($(date +%s) + " + fmt.Sprint(grace) + "))\n" +
		"  while [ \"$(date +%s)\" -lt $end ]; do hs_sweep 0; [ -n \"$hs_found\" ] || return 0; sleep 0.2; done\n" +
		"  hs_sweep KILL\n" +
		"}\n"
}

func (p *procExec) CommandContext(ctx context.Context, name string, arg ...string) exec.Cmder {
	c := osexec.CommandContext(ctx, "/bin/sh", append([]string{"-c", groupGuard(p.marker), "sh", name}, arg...)...)
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
		signalRun(pid, p.marker, syscall.SIGTERM)
		go func() {
			// ansible-playbook may be gone before its workers (2.19's
			// stop on its word, in sessions of their own): what is left
			// of the run after killGrace is killed, whatever its group.
			deadline := time.After(killGrace)
			select {
			case <-p.waitedCh():
			case <-deadline:
				signalRun(pid, p.marker, syscall.SIGKILL)
				return
			}
			for len(runProcs(p.marker)) > 0 {
				select {
				case <-deadline:
					signalRun(pid, p.marker, syscall.SIGKILL)
					return
				case <-time.After(200 * time.Millisecond):
				}
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
	if err := signalRun(pid, p.marker, syscall.SIGKILL); err != nil {
		return fmt.Sprintf("left behind: ansible-playbook (pid %d) on this machine: killing its process group: %v", pid, err)
	}
	return fmt.Sprintf("stopped: ansible-playbook (pid %d) on this machine and its process group, with SIGKILL", pid)
}

// signalRun sends sig to the run's process group (pgid) and to every
// process of the run outside it, with theirs: ansible-core 2.19 starts
// each worker in a session of its own (os.setsid in WorkerProcess), and
// the ssh and module processes of a worker in the worker's group, so that
// a signal to ansible-playbook's group alone reached none of them (seen:
// a worker, and an ssh running a task on a node, left after a cancel).
// It returns the error of the signal to the group.
func signalRun(pgid int, marker string, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	for _, pid := range runProcs(marker) {
		shm := askpassShm(pid)
		_ = syscall.Kill(-pid, sig) // a worker leads its group: its ssh, its modules
		_ = syscall.Kill(pid, sig)
		removeAskpassShm(shm)
	}
	return err
}

// askpassShm is the name of the shared memory in which ansible-core 2.19
// hands a node's password to the ssh of process pid (its environment's
// _ANSIBLE_SSH_ASKPASS_SHM, /dev/shm/psm_...), or "". The worker that
// made it removes it when ssh returns, in a finally block that a worker
// stopped by a signal skips (os._exit): a stopped run would leave the
// password in /dev/shm.
func askpassShm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "_ANSIBLE_SSH_ASKPASS_SHM="); ok && askpassShmName.MatchString(v) {
			return v
		}
	}
	return ""
}

// askpassShmName is what Python's SharedMemory names (psm_ and hex), so
// that nothing else in /dev/shm can be named.
var askpassShmName = regexp.MustCompile(`^psm_[0-9A-Za-z_]+$`)

// removeAskpassShm removes the shared memory askpassShm named, if any (the
// ssh it was for has just been signalled: it needs the password no more).
func removeAskpassShm(name string) {
	if name != "" {
		_ = os.Remove("/dev/shm/" + name)
	}
}

// runProcs are the processes of this machine whose command line names
// marker, the run's bundle directory, or a path in it (ansible-playbook and
// its workers, which are forks of it), but not a shell's "-c" script that
// names it. The directory must end where an argument does or at a "/":
// another run's /x/heatsible-c-apply-12 is not /x/heatsible-c-apply-1's.
func runProcs(marker string) []int {
	if marker == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || (!strings.Contains(string(b), marker+"/") && !strings.Contains(string(b), marker+"\x00")) {
			continue
		}
		if args := strings.Split(string(b), "\x00"); len(args) > 1 && args[1] == "-c" {
			continue
		}
		out = append(out, pid)
	}
	return out
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
