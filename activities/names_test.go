package activities

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// contractActivityNames reads every `Name…` string constant package
// contract declares, from its source: the workflows call activities by
// these names, so a name added there without an activity behind it must
// fail here, not in a running session.
func contractActivityNames(t *testing.T) map[string]string {
	t.Helper()
	pkg, err := build.Default.Import("github.com/conclave-ai/conclave/contract", ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // value -> constant
	fset := token.NewFileSet()
	for _, file := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Name") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("contract.%s is not a string literal: keep activity names plain so this test can read them", id.Name)
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					names[v] = id.Name
				}
			}
		}
	}
	return names
}

// The worker registers *Activities as a struct: every exported method is an
// activity under its method name. So the names contract declares and the
// methods must be the same set.
func TestContractNamesAreActivities(t *testing.T) {
	names := contractActivityNames(t)
	if len(names) == 0 {
		t.Fatal("found no Name… constants in package contract")
	}
	typ := reflect.TypeOf(&Activities{})
	for value, constant := range names {
		if _, ok := typ.MethodByName(value); !ok {
			t.Errorf("contract.%s names activity %q, but Activities has no such method, so the worker does not register it", constant, value)
		}
	}
	for i := range typ.NumMethod() {
		if m := typ.Method(i).Name; names[m] == "" {
			t.Errorf("Activities.%s is registered as an activity, but contract declares no Name… constant for it, so workflows cannot call it by name", m)
		}
	}
}
