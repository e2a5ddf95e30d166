package checkpoint

import (
	"encoding/json"
	"errors"
	"testing"
)

// scanAll reports whether the scanner accepts b as exactly one JSON value
// with optional surrounding white space.
func scanAll(b []byte) (ok bool, err error) {
	s := &jsonScanner{b: b, format: "test"}
	if err := s.skipValue(0); err != nil {
		return false, err
	}
	s.skipSpace()
	if s.i != len(b) {
		return false, s.syntax("the end")
	}
	return true, nil
}

var jsonSnippets = []string{
	`0`, `-0`, `1`, `-1`, `10`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-01`, `2.0e10`, `1.5.5`, `+1`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\uD83D\uDE00"`, `"\uD800"`, `"\u12"`, `"\x41"`, `"\'"`,
	`"a` + "\x01" + `"`, `"a` + "\t" + `"`, `"é"`, `"unterminated`, `"\`,
	`true`, `false`, `null`, `tru`, `nul`, `True`, `nulll`,
	`[]`, `[ ]`, `[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `[`, `]`, `[[[]]]`, `[{"a":[1,{"b":null}]}]`,
	`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":}`, `{1:2}`, `{"a":1}}`, `{"a":{"b":{"c":[]}}}`,
	` 1 `, "\n\t{}\r ", ``, ` `, `1 2`, `{"a":"b"}x`,
}

func TestJSONScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, js := range jsonSnippets {
		ok, err := scanAll([]byte(js))
		if ok != json.Valid([]byte(js)) {
			t.Errorf("%q: scanner %v (%v), encoding/json %v", js, ok, err, json.Valid([]byte(js)))
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: error %v is not ErrMalformed", js, err)
		}
	}
}

func TestJSONScannerStrings(t *testing.T) {
	for _, js := range []string{`"plain"`, `"a\"b"`, `"\u00e9t\u00E9"`, `"\uD83D\uDE00"`, `"\uD800x"`, `"tab\tnew\nline"`, `"é"`} {
		s := &jsonScanner{b: []byte(js), format: "test"}
		got, err := s.str()
		var want string
		if jerr := json.Unmarshal([]byte(js), &want); err != nil || jerr != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q, %v", js, got, err, want, jerr)
		}
	}
}

func FuzzJSONScanner(f *testing.F) {
	for _, js := range jsonSnippets {
		f.Add([]byte(js))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, err := scanAll(b)
		if ok != json.Valid(b) {
			// The scanner nests at most jsonMaxDepth levels.
			if !ok && errors.Is(err, ErrTooLarge) {
				return
			}
			t.Fatalf("%q: scanner %v (%v), encoding/json %v", b, ok, err, json.Valid(b))
		}
	})
}
