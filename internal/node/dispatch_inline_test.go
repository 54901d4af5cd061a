package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// runDispatchChecks, the chain executeCmd runs, calls the checks of
// dispatchChecks, all of them, in the table's order.
func TestDispatchChecksInOrder(t *testing.T) {
	var want []string
	for _, ch := range dispatchChecks {
		name := runtime.FuncForPC(reflect.ValueOf(ch.run).Pointer()).Name()
		want = append(want, name[strings.LastIndex(name, ".")+1:])
	}
	f, err := parser.ParseFile(token.NewFileSet(), "dispatch.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "runDispatchChecks" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok {
					got = append(got, id.Name)
				}
			}
			return true
		})
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("runDispatchChecks calls\n  %v\nthe table lists\n  %v", got, want)
	}
}
