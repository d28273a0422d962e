package params

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// LBInterface is how heatsible drives the external load balancer's script
// (external_lb_param.script_path); docs/external-lb.md describes both.
type LBInterface string

const (
	// LBHeatsible is heatsible's own interface: SCRIPT [--check] install |
	// add-route NAME ADDRESS | remove-route NAME | list-routes, idempotent,
	// run at every operation. A script declares it with LBInterfaceMarker.
	LBHeatsible LBInterface = "heatsible"
	// LBTacker is the contract of Tacker's kubespray sample
	// install_external_lb.sh: run once as "bash SCRIPT -m MASTER_IPS -w
	// WORKER_IPS"; heatsible then maintains the server lines of haproxy's
	// "backend kubernetes-nodeport" itself. Recognised by a getopts whose
	// option string has m: and w:.
	LBTacker LBInterface = "tacker"
)

// LBInterfaceMarker is the comment line by which a script declares
// heatsible's own interface (contrib/external-lb/haproxy-lb.sh carries it).
const LBInterfaceMarker = "# heatsible-external-lb-interface: 1"

var (
	// markerLine matches LBInterfaceMarker with any spacing.
	markerLine = regexp.MustCompile(`^#\s*heatsible-external-lb-interface:\s*1\s*$`)
	// getoptsCall finds "getopts OPTSTRING" (the option string bare or
	// quoted) where a command may start: line start, after ; & | ( or
	// "while"/"until"/"if".
	getoptsCall = regexp.MustCompile(`(?:^|[;&|(\s])getopts\s+(?:"([^"]*)"|'([^']*)'|([^\s;&|)]+))`)
)

// DetectLBInterface tells which interface script follows: LBHeatsible when
// it carries LBInterfaceMarker (checked first: an explicit declaration),
// else LBTacker when a getopts call takes both -m and -w with an argument
// (Tacker runs the script with bash, so bash's getopts is how it reads
// them). A script that fits neither is refused with what to add.
func DetectLBInterface(script []byte) (LBInterface, error) {
	tacker := false
	sc := bufio.NewScanner(bytes.NewReader(script))
	sc.Buffer(make([]byte, 64<<10), MaxScriptSize+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if markerLine.MatchString(line) {
			return LBHeatsible, nil
		}
		if strings.HasPrefix(line, "#") || tacker {
			continue
		}
		for _, m := range getoptsCall.FindAllStringSubmatch(line, -1) {
			if optstringTakes(m[1]+m[2]+m[3], 'm') && optstringTakes(m[1]+m[2]+m[3], 'w') {
				tacker = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading the script: %v", err)
	}
	if tacker {
		return LBTacker, nil
	}
	return "", fmt.Errorf("fits neither load-balancer script interface heatsible knows (docs/external-lb.md); "+
		"a script for heatsible's interface (commands install, add-route, remove-route, list-routes) declares it with the line %q; "+
		"a script for Tacker's contract (run once as \"bash SCRIPT -m MASTER_IPS -w WORKER_IPS\", like Tacker's install_external_lb.sh) "+
		"reads its options with getopts, e.g. 'while getopts \"m:w:\" opt; do'; add one of the two", LBInterfaceMarker)
}

// optstringTakes reports whether getopts option string s has option c
// with an argument ("c:").
func optstringTakes(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c && i+1 < len(s) && s[i+1] == ':' {
			return true
		}
	}
	return false
}

// ReadLBScript reads the external load balancer's script from the package
// and tells its interface.
func ReadLBScript(pkgDir, rel string) ([]byte, LBInterface, error) {
	script, err := ReadPackageFile(pkgDir, rel, MaxScriptSize)
	if err != nil {
		return nil, "", err
	}
	iface, err := DetectLBInterface(script)
	if err != nil {
		return nil, "", fmt.Errorf("%s %w", quote(rel), err)
	}
	return script, iface, nil
}
