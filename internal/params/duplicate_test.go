package params

import (
	"reflect"
	"strings"
	"testing"
)

func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a"}},
		{`{"a":{"b":1},"c":{"b":2}}`, nil},
		{`{"a":[{"x":1,"x":2},{"x":1}],"a":[]}`, []string{"a[0].x", "a"}},
		{`{"a":[[{"k":1,"k":1}]]}`, []string{"a[0][0].k"}},
		{`{"export_dir":"/etc","export\u005fdir":"/v"}`, []string{"export_dir"}},
		{`{"a":"a","b":["a","a"],"c":{"a":"a"}}`, nil},
		{`[{"a":1,"a":1}]`, []string{"[0].a"}},
	}
	for _, tt := range tests {
		if got := duplicateKeys([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("duplicateKeys(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDuplicateKeyProblem(t *testing.T) {
	for _, tt := range []struct{ in, path string }{
		{`{"additionalParams":{"k8s_cluster_installation_param":{"master_node":{"password":"a1234567","password":"b1234567"}}}}`, Prefix + ".master_node.password"},
		{`{"k8s_cluster_installation_param":{"worker_node":{"username":"u","username":"v"}}}`, Prefix + ".worker_node.username"},
	} {
		req, err := Parse([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		err = req.Validate(Options{})
		if err == nil || !strings.Contains(err.Error(), tt.path+": is given more than once") {
			t.Errorf("%s: want a problem at %s, got\n%v", tt.in, tt.path, err)
		}
		if strings.Contains(err.Error(), "1234567") {
			t.Errorf("the problem echoes a password:\n%v", err)
		}
	}
}

func TestInvisiblePackagePath(t *testing.T) {
	for _, p := range []string{"Files/\u202epv.yaml", "Files/pv\u200b.yaml", "Files/p\u00a0v.yaml", "Files/\xffpv.yaml", "\ufeffFiles/pv.yaml"} {
		var ps Problems
		if checkPackageFile(&ps, "x", p, Options{PackageDir: "."}) || len(ps) != 1 || !strings.Contains(ps[0].Msg, "invisible") {
			t.Errorf("%q: want an invisible-character problem, got %v", p, ps)
		}
	}
}

// TestScanJSONText: strings that Go's JSON decoder would silently turn
// into U+FFFD (bytes that are not UTF-8, lone surrogates) are found with
// their path, keys too; escaped backslashes and surrogate pairs are not.
func TestScanJSONText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{`{"a": "pw\ud83d\ude00"}`, nil},
		{`{"a": "pw\\ud800"}`, nil},
		{`{"a": "\\\ud83d\ude00"}`, nil},
		{`{"a": "x\u00e9\u2028"}`, nil},
		{`{"a": "pw\ud800x"}`, []string{"a"}},
		{`{"a": "pw\ud800"}`, []string{"a"}},
		{`{"a": "pw\udc00"}`, []string{"a"}},
		{`{"a": "\\\ud800"}`, []string{"a"}},
		{`{"a": ["ok", "\ud83d\ud83d"]}`, []string{"a[1]"}},
		{"{\"a\": {\"b\": \"pw\xff\xfe\"}}", []string{"a.b"}},
		{"{\"k\xff\": 1}", []string{"[\"k\ufffd\"]"}},
	} {
		_, bad := scanJSON([]byte(tt.in))
		var got []string
		for _, p := range bad {
			got = append(got, p.Path)
			if strings.Contains(p.Msg, "pw") {
				t.Errorf("%s: the message shows the value: %s", tt.in, p.Msg)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("scanJSON(%q) found %q, want %q", tt.in, got, tt.want)
		}
	}
}
