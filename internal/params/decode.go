package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/heatsible/heatsible/internal/redact"
)

// Prefix is the JSON path of the cluster parameters; every problem and
// warning is reported under it, whether the file held the whole request body
// or only additionalParams.
const Prefix = "additionalParams.k8s_cluster_installation_param"

// MaxRequestSize bounds a request file. Real requests are a few KiB; the
// bound keeps a mistaken path (an image, a log) from being read whole.
const MaxRequestSize = 4 << 20

// Problem is one thing wrong with the input, with the JSON path of the field.
type Problem struct {
	Path string
	Msg  string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Problems is every problem found; it is an error when not empty.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps *Problems) add(path, format string, a ...any) {
	*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, a...)})
}

// NameLog makes *ps a masked copy whose last problem names the run log
// (a run's error found with errors.As: see state.LogNamer), so that the
// CLI, which prints problems one per line, ends them with "(log: PATH)".
func (ps *Problems) NameLog(mask func(string) string, log string) {
	if len(*ps) == 0 {
		return
	}
	c := slices.Clone(*ps)
	for i := range c {
		c[i].Msg = mask(c[i].Msg)
	}
	c[len(c)-1].Msg += " (log: " + log + ")"
	*ps = c
}

// Err returns ps as an error, or nil when there is none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// IsInvalid reports whether err is (or wraps) a Problems list: bad input, as
// opposed to a failure to reach something.
func IsInvalid(err error) bool {
	var ps Problems
	return errors.As(err, &ps)
}

// Load reads the request file at path and parses it (see Parse).
func Load(path string) (*Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Problems{{Path: "--request", Msg: fmt.Sprintf("cannot read the request file: %v", err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRequestSize+1))
	if err != nil {
		return nil, Problems{{Path: "--request", Msg: fmt.Sprintf("reading %s: %v", path, err)}}
	}
	if len(data) > MaxRequestSize {
		return nil, Problems{{Path: "--request", Msg: fmt.Sprintf("%s is larger than %d bytes; an instantiate request is a few KiB, is this the right file?", path, MaxRequestSize)}}
	}
	return Parse(data)
}

// Parse decodes an instantiate request: either Tacker's whole body (with
// "additionalParams") or additionalParams alone (with
// "k8s_cluster_installation_param"). Unknown fields become warnings. A field
// of the wrong JSON type is kept as its zero value and reported by Validate,
// together with every other problem; Parse itself fails only when the file
// is not a request at all.
func Parse(data []byte) (*Request, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, Problems{{Path: "(request)", Msg: fmt.Sprintf("is not valid JSON: %v", err)}}
	}
	if dec.More() {
		return nil, Problems{{Path: "(request)", Msg: "holds more than one JSON value; give one instantiate request"}}
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, Problems{{Path: "(request)", Msg: fmt.Sprintf("is a JSON %s; want an object with additionalParams or k8s_cluster_installation_param", jsonKind(root))}}
	}
	var probs Problems
	// A key given twice is ambiguous: Go and Python keep the last value,
	// other readers (and a human reviewing the request) the first.
	_, whole := obj["additionalParams"]
	dups, badText := scanJSON(data)
	for _, p := range dups {
		if !whole {
			p = "additionalParams." + p
		}
		probs.add(p, "is given more than once in its object; JSON readers differ on which one counts, so give it once")
	}
	for _, b := range badText {
		if !whole {
			b.Path = "additionalParams." + b.Path
		}
		probs = append(probs, b)
	}
	addl := obj
	addlPath := "additionalParams"
	if v, ok := obj["additionalParams"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, Problems{{Path: "additionalParams", Msg: fmt.Sprintf("is a JSON %s; want an object", jsonKind(v))}}
		}
		addl = m
	} else if _, ok := obj["k8s_cluster_installation_param"]; !ok {
		return nil, Problems{{Path: "(request)", Msg: "has neither additionalParams nor k8s_cluster_installation_param; give Tacker's instantiate request body or its additionalParams"}}
	}
	raw, ok := addl["k8s_cluster_installation_param"]
	if !ok {
		return nil, Problems{{Path: addlPath + ".k8s_cluster_installation_param", Msg: "is missing; heatsible needs the cluster installation parameters"}}
	}
	req := &Request{}
	d := decoder{probs: &probs, warn: &req.Warnings}
	d.decode(Prefix, raw, reflect.ValueOf(&req.Cluster).Elem())
	req.parseProblems = probs
	req.applyDefaults()
	return req, nil
}

// applyDefaults fills in what the seeds' documents leave out, so that every
// later step sees one request: storage_server.nic_cp_name is ssh_cp_name
// when missing (the PV spec's body has none). It also warns about CIDRs
// handed to kubespray with host bits set (the seeds' pod_cidr
// 192.168.3.0/16): kubespray gets the network they mean.
func (r *Request) applyDefaults() {
	c := &r.Cluster
	if s := c.StorageServer; s != nil && s.NICCPName == "" {
		s.NICCPName = s.SSHCPName
	}
	if m := c.MasterNode; m != nil && c.Ansible != nil && c.Ansible.KubesprayRootPath != "" {
		for _, f := range []struct{ name, v, kvar string }{{"pod_cidr", m.PodCIDR, "kube_pods_subnet"}, {"cluster_cidr", m.ClusterCIDR, "kube_service_addresses"}} {
			if pr, err := netip.ParsePrefix(f.v); err == nil && pr.Masked() != pr {
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s.master_node.%s: %q has host bits set; kubespray gets the network it means, %s: %s",
					Prefix, f.name, f.v, f.kvar, pr.Masked()))
			}
		}
	}
}

type decoder struct {
	probs *Problems
	warn  *[]string
}

// decode copies the generic JSON value v into dst, recording a problem for
// every type mismatch and a warning for every unknown object key.
func (d decoder) decode(path string, v any, dst reflect.Value) {
	if v == nil { // JSON null: leave the zero value, "missing" is Validate's call
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if _, ok := v.(map[string]any); !ok {
			d.probs.add(path, "is a JSON %s; want an object", jsonKind(v))
			return
		}
		nv := reflect.New(dst.Type().Elem())
		d.decode(path, v, nv.Elem())
		dst.Set(nv)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.probs.add(path, "is a JSON %s; want an object", jsonKind(v))
			return
		}
		fields := map[string]int{}
		t := dst.Type()
		for i := 0; i < t.NumField(); i++ {
			if tag := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]; tag != "" {
				fields[tag] = i
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			i, ok := fields[k]
			if !ok {
				*d.warn = append(*d.warn, fmt.Sprintf("%s: unknown field, ignored (misspelt?)", joinKey(path, k)))
				continue
			}
			d.decode(path+"."+k, m[k], dst.Field(i))
		}
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			d.probs.add(path, "is a JSON %s; want a list", jsonKind(v))
			return
		}
		s := reflect.MakeSlice(dst.Type(), len(a), len(a))
		for i, e := range a {
			d.decode(fmt.Sprintf("%s[%d]", path, i), e, s.Index(i))
		}
		dst.Set(s)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.probs.add(path, "is a JSON %s; want a string", jsonKind(v))
			return
		}
		dst.SetString(s)
	default:
		panic("params: unsupported field kind " + dst.Kind().String())
	}
}

// duplicateKeys returns the path of every object key that occurs more than
// once in its object, in document order. data is valid JSON (Parse decoded
// it already).
func duplicateKeys(data []byte) []string {
	dups, _ := scanJSON(data)
	return dups
}

// scanJSON walks the JSON document data (valid: Parse decoded it already)
// and returns the path of every object key that occurs more than once in
// its object, and a problem for every string (key or value) whose text
// Go's decoder would silently change: bytes that are not UTF-8 and lone
// UTF-16 surrogates ("\ud800") both become U+FFFD, so a password holding
// them would not be the one the user typed. The string itself is never
// shown.
func scanJSON(data []byte) ([]string, Problems) {
	var bad Problems
	checkText := func(path string, key bool, raw []byte) {
		what := "the value"
		if key {
			what = "the key"
		}
		if i := bytes.IndexByte(raw, '"'); i >= 0 {
			raw = raw[i:]
		}
		switch {
		case !utf8.Valid(raw):
			bad.add(path, "%s holds bytes that are not UTF-8; JSON readers turn them into U+FFFD, so it would not be what was written: save the request as UTF-8 (the value is not shown)", what)
		case loneSurrogate(raw):
			bad.add(path, "%s holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair); JSON readers turn it into U+FFFD, so it would not be what was written: write the character itself (the value is not shown)", what)
		}
	}
	type frame struct {
		object    bool
		path      string
		keys      map[string]bool
		key       string // the current key (objects)
		expectKey bool   // objects: the next string is a key
		index     int    // lists: the index of the next element
	}
	join := joinKey
	var stack []*frame
	var dups []string
	// next returns the path of the value that starts now in the container
	// on top of the stack, and moves that container on.
	next := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			f.expectKey = true
			return join(f.path, f.key)
		}
		f.index++
		return fmt.Sprintf("%s[%d]", f.path, f.index-1)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return dups, bad
		}
		raw := data[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				p := next()
				stack = append(stack, &frame{object: v == '{', path: p, keys: map[string]bool{}, expectKey: v == '{'})
			} else if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				f := stack[n-1]
				if f.keys[v] {
					dups = append(dups, join(f.path, v))
				}
				f.keys[v] = true
				f.key, f.expectKey = v, false
				checkText(join(f.path, v), true, raw)
				continue
			}
			p := next()
			checkText(p, false, raw)
			continue
		}
		next()
	}
}

// loneSurrogate reports whether the JSON string literal raw (with its
// quotes) has a \u escape of a UTF-16 surrogate that is not half of a
// pair: a high one (D800-DBFF) not followed by a low one, or a low one
// (DC00-DFFF) on its own.
func loneSurrogate(raw []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range raw[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // another escape: skip the escaped character
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return true
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		}
		i += 5
	}
	return false
}

// plainKey is an object key that a JSON path shows as it is.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// joinKey is the JSON path of key in the object at path: "path.key", or
// path["key"] with the key escaped and cut (redact.Quote) when it holds
// anything but letters, digits, '_' and '-'. A key is the user's text: in a
// warning or a problem's path it must not drive the terminal or forge a
// line.
func joinKey(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + redact.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
