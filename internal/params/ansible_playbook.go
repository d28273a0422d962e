package params

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// commandName is an executable looked up in PATH (ansible-playbook,
// ansible-playbook-3.11, ...).
var commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)

// CheckAnsiblePlaybook checks a setting of which ansible-playbook runs
// (ansible.ansible_playbook, ansible.kubespray_ansible_playbook, and the
// run flags --ansible-playbook, --kubespray-ansible-playbook): a command
// name looked up in the Ansible host's PATH, or an absolute path ("~/" for
// the SSH user's home) of an ansible-playbook or of a virtualenv. It returns
// what is wrong ("" when nothing is). The value reaches a shell on the
// Ansible host, quoted: the grammar keeps it to path characters anyway.
func CheckAnsiblePlaybook(v string) string {
	p := v
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		p = "/" + rest
	}
	switch {
	case len(v) > maxPath:
		return fmt.Sprintf("is %d characters long; the limit is %d", len(v), maxPath)
	case !strings.Contains(v, "/"):
		if !commandName.MatchString(v) {
			return fmt.Sprintf("%s is not a command name; give ansible-playbook's name in PATH, or an absolute path of it or of its virtualenv", quote(v))
		}
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%s is a relative path; give an absolute path (or ~/... in the SSH user's home) of ansible-playbook or of its virtualenv", quote(v))
	case !safePath.MatchString(p):
		return fmt.Sprintf("%s contains characters that are not allowed in a path here; use ASCII letters, digits and _ . / @ + - only (no spaces, quotes, ';', parentheses, '*' or non-ASCII look-alikes)", quote(v))
	case hasDotDot(p):
		return fmt.Sprintf("%s contains a '..' component; give the real path", quote(v))
	case path.Clean(p) != strings.TrimSuffix(p, "/") || p == "/":
		return fmt.Sprintf("%s is not a clean path of a file or directory", quote(v))
	}
	return ""
}

func checkAnsiblePlaybooks(ps *Problems, p string, a *Ansible) {
	for _, f := range []struct{ name, v string }{{"ansible_playbook", a.AnsiblePlaybook}, {"kubespray_ansible_playbook", a.KubesprayAnsiblePlaybook}} {
		if f.v == "" {
			continue
		}
		if msg := CheckAnsiblePlaybook(f.v); msg != "" {
			ps.add(p+"."+f.name, "%s", msg)
		}
	}
	if a.KubesprayAnsiblePlaybook != "" && a.KubesprayRootPath == "" {
		ps.add(p+".kubespray_ansible_playbook", "is set, but kubespray_root_path is not: heatsible runs kubespray only when kubespray_root_path names its checkout")
	}
}
