package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMissingDisplay(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		goos    string
		env     func(string) string
		missing bool
	}{
		{"linux", env(), true},
		{"freebsd", env("DISPLAY", ""), true},
		{"linux", env("DISPLAY", ":0"), false},
		{"linux", env("WAYLAND_DISPLAY", "wayland-0"), false},
		{"openbsd", env("DISPLAY", ":99"), false},
		{"windows", env(), false},
		{"darwin", env(), false},
		{"js", env(), false},
	} {
		msg := missingDisplay(c.goos, c.env)
		if (msg != "") != c.missing {
			t.Errorf("%s: %q", c.goos, msg)
		}
		if c.missing && (!strings.Contains(msg, "DISPLAY") || !strings.Contains(msg, "make web")) {
			t.Errorf("%s: the message does not say what to do: %q", c.goos, msg)
		}
	}
}

// The workbench logs no Fyne error at start: six theme lookups in package
// variables (the tabs' icons) ran before any app was started, and Fyne
// logged "Attempt to access current Fyne app when none is started" for
// each, every time. Package variables run before any test, with fyne's
// test app already started by its package, so this checks the source: no
// package variable of the workbench calls into Fyne. Then it builds the
// workbench on the test app and opens a demo model with the log captured.
func TestStartLogsNoFyneError(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		fyneImports := map[string]bool{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "fyne.io/") {
				local := path.Base(p)
				if im.Name != nil {
					local = im.Name.Name
				}
				fyneImports[local] = true
			}
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			ast.Inspect(g, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false // runs later, when called
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && fyneImports[x.Name] {
							t.Errorf("%s: a package variable calls %s.%s before any app is started", fset.Position(n.Pos()), x.Name, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	var buf bytes.Buffer
	defer log.SetOutput(log.Writer())
	log.SetOutput(&buf)
	wb := newTestBench(t)
	openDemo(t, wb, "silero-vad")
	wb.selectTab("Trajectory")
	if s := buf.String(); strings.Contains(s, "Fyne error") {
		t.Fatalf("starting the workbench logged:\n%s", s)
	}
}
