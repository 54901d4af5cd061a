package script

import (
	"bytes"
	"strconv"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// gopher-lua has no line hook, so a script run under the debugger is
// compiled from an instrumented syntax tree instead: before every
// statement (and in every empty loop body, so that no loop runs without
// one) a call of the debugger's hook with the statement's line. The hook
// is the chunk's first vararg, kept in a local whose name no source text
// can spell, so a script can neither call nor shadow it. A statement
// spanning several lines stops once, at its first line (Lua's line hook
// may stop at each of them). Scripts not under the debugger are compiled
// as before and pay nothing.

// hookLocal is the name of the local holding the hook: "(" cannot start
// an identifier in Lua source.
const hookLocal = "(ldb)"

// compileDebug compiles src with the debugger's hook calls.
func compileDebug(src []byte, name string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	decl := &ast.LocalAssignStmt{Names: []string{hookLocal}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	body := append([]ast.Stmt{decl}, instrumentBlock(chunk, 0)...)
	proto, err := lua.Compile(body, name)
	if err != nil {
		return nil, err
	}
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

// hookCall is the statement "(ldb)(line)".
func hookCall(line int) ast.Stmt {
	fn := &ast.IdentExpr{Value: hookLocal}
	fn.SetLine(line)
	arg := &ast.NumberExpr{Value: strconv.Itoa(line)}
	arg.SetLine(line)
	call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{arg}}
	call.SetLine(line)
	call.SetLastLine(line)
	st := &ast.FuncCallStmt{Expr: call}
	st.SetLine(line)
	st.SetLastLine(line)
	return st
}

// instrumentBlock returns stmts with a hook call before each; an empty
// block gets one at emptyLine when it is not 0 (a loop's body).
func instrumentBlock(stmts []ast.Stmt, emptyLine int) []ast.Stmt {
	if len(stmts) == 0 {
		if emptyLine > 0 {
			return []ast.Stmt{hookCall(emptyLine)}
		}
		return stmts
	}
	out := make([]ast.Stmt, 0, 2*len(stmts))
	for _, s := range stmts {
		instrumentStmt(s)
		out = append(out, hookCall(s.Line()), s)
	}
	return out
}

// instrumentStmt instruments the blocks inside s, and the functions in
// its expressions.
func instrumentStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		instrumentExprs(s.Lhs)
		instrumentExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		instrumentExprs(s.Exprs)
	case *ast.FuncCallStmt:
		instrumentExpr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = instrumentBlock(s.Stmts, 0)
	case *ast.WhileStmt:
		instrumentExpr(s.Condition)
		s.Stmts = instrumentBlock(s.Stmts, s.Line())
	case *ast.RepeatStmt:
		instrumentExpr(s.Condition)
		s.Stmts = instrumentBlock(s.Stmts, s.Line())
	case *ast.IfStmt:
		instrumentExpr(s.Condition)
		s.Then = instrumentBlock(s.Then, 0)
		if len(s.Else) == 1 {
			if elif, ok := s.Else[0].(*ast.IfStmt); ok {
				// elseif: the nested if is the else block's only
				// statement; it stops at its own line.
				instrumentStmt(elif)
				s.Else = []ast.Stmt{hookCall(elif.Line()), elif}
				return
			}
		}
		s.Else = instrumentBlock(s.Else, 0)
	case *ast.NumberForStmt:
		instrumentExpr(s.Init)
		instrumentExpr(s.Limit)
		instrumentExpr(s.Step)
		s.Stmts = instrumentBlock(s.Stmts, s.Line())
	case *ast.GenericForStmt:
		instrumentExprs(s.Exprs)
		s.Stmts = instrumentBlock(s.Stmts, s.Line())
	case *ast.FuncDefStmt:
		if s.Name != nil {
			instrumentExpr(s.Name.Func)
			instrumentExpr(s.Name.Receiver)
		}
		instrumentExpr(s.Func)
	case *ast.ReturnStmt:
		instrumentExprs(s.Exprs)
	}
}

func instrumentExprs(es []ast.Expr) {
	for _, e := range es {
		instrumentExpr(e)
	}
}

// instrumentExpr instruments the bodies of the functions defined in e.
func instrumentExpr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.FunctionExpr:
		e.Stmts = instrumentBlock(e.Stmts, 0)
	case *ast.AttrGetExpr:
		instrumentExpr(e.Object)
		instrumentExpr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			instrumentExpr(f.Key)
			instrumentExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		instrumentExpr(e.Func)
		instrumentExpr(e.Receiver)
		instrumentExprs(e.Args)
	case *ast.LogicalOpExpr:
		instrumentExpr(e.Lhs)
		instrumentExpr(e.Rhs)
	case *ast.RelationalOpExpr:
		instrumentExpr(e.Lhs)
		instrumentExpr(e.Rhs)
	case *ast.StringConcatOpExpr:
		instrumentExpr(e.Lhs)
		instrumentExpr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		instrumentExpr(e.Lhs)
		instrumentExpr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		instrumentExpr(e.Expr)
	case *ast.UnaryNotOpExpr:
		instrumentExpr(e.Expr)
	case *ast.UnaryLenOpExpr:
		instrumentExpr(e.Expr)
	}
}
