package heat

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePyLiteral(t *testing.T) {
	for in, want := range map[string]any{
		`[{'id': 'a6', 'device': '/dev/vdb', 'host_name': None, 'n': 5, 'ok': True}]`: []any{
			map[string]any{"id": "a6", "device": "/dev/vdb", "host_name": nil, "n": 5.0, "ok": true}},
		`[{u'device': u'/dev/vdc', u'size': 5L}]`: []any{map[string]any{"device": "/dev/vdc", "size": 5.0}},
		`({"a": [1, -2.5e1, false, null]},)`:      []any{map[string]any{"a": []any{1.0, -25.0, false, nil}}},
		`'it\'s \x41\u00e9 "q" \\ \d'`:            `it's Aé "q" \ \d`,
		`  []  `:                                  []any{},
		`{'k': {'n': [[], {}]}, 'x': "a'b",}`:     map[string]any{"k": map[string]any{"n": []any{[]any{}, map[string]any{}}}, "x": "a'b"},
	} {
		got, err := parsePyLiteral(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", in, got, want)
		}
	}
	for in, want := range map[string]string{
		``:                                       "end of input",
		`[{'a': datetime.datetime(2020, 1, 1)}]`: "unsupported value",
		`[{'a': 1}] trailing`:                    "after the value",
		`[{'a' 1}]`:                              "expected ':'",
		`['unterminated]`:                        "unterminated string",
		`[1, 2`:                                  "unterminated list",
		`{1: 2}`:                                 "not a string",
		`__import__('os')`:                       "unsupported value",
		`Nonesuch`:                               "unsupported value",
		strings.Repeat("[", 40) + strings.Repeat("]", 40): "deeper",
	} {
		_, err := parsePyLiteral(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}
