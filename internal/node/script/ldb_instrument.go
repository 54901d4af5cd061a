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
	var in instrumenter
	body := append([]ast.Stmt{decl}, in.block(chunk, 0, 0, 0)...)
	proto, err := lua.Compile(body, name)
	if err != nil {
		return nil, err
	}
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

// instrumenter numbers the hook calls it inserts.
type instrumenter struct{ last int }

// hookCall is the statement "(ldb)(line, id, after)": id is the call's
// number; after, when not 0, is the hook whose stop makes this one
// silent when it ran just before (no other hook between): a statement
// on the line where the statement enclosing its block, or the statement
// before it, stopped. Lua's line hook stops once per line so entered.
func (in *instrumenter) hookCall(line, after int) (ast.Stmt, int) {
	in.last++
	id := in.last
	fn := &ast.IdentExpr{Value: hookLocal}
	fn.SetLine(line)
	var args []ast.Expr
	for _, v := range []int{line, id, after} {
		arg := &ast.NumberExpr{Value: strconv.Itoa(v)}
		arg.SetLine(line)
		args = append(args, arg)
	}
	call := &ast.FuncCallExpr{Func: fn, Args: args}
	call.SetLine(line)
	call.SetLastLine(line)
	st := &ast.FuncCallStmt{Expr: call}
	st.SetLine(line)
	st.SetLastLine(line)
	return st, id
}

// block returns stmts with a hook call before each; an empty block gets
// one at emptyLine when it is not 0 (a loop's body). The block belongs
// to a statement at line whose hook is owner (0: none).
func (in *instrumenter) block(stmts []ast.Stmt, emptyLine, line, owner int) []ast.Stmt {
	if len(stmts) == 0 {
		if emptyLine > 0 {
			h, _ := in.hookCall(emptyLine, owner)
			return []ast.Stmt{h}
		}
		return stmts
	}
	out := make([]ast.Stmt, 0, 2*len(stmts))
	for _, s := range stmts {
		after := 0
		if s.Line() == line {
			after = owner
		}
		h, id := in.hookCall(s.Line(), after)
		in.stmt(s, id)
		out = append(out, h, s)
		line, owner = s.Line(), id
	}
	return out
}

// stmt instruments the blocks inside s, whose hook is id, and the
// functions in its expressions.
func (in *instrumenter) stmt(s ast.Stmt, id int) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		in.exprs(s.Lhs)
		in.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		in.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		in.expr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = in.block(s.Stmts, 0, s.Line(), id)
	case *ast.WhileStmt:
		in.expr(s.Condition)
		s.Stmts = in.block(s.Stmts, s.Line(), s.Line(), id)
	case *ast.RepeatStmt:
		in.expr(s.Condition)
		s.Stmts = in.block(s.Stmts, s.Line(), s.Line(), id)
	case *ast.IfStmt:
		in.expr(s.Condition)
		s.Then = in.block(s.Then, 0, s.Line(), id)
		// An elseif is the else block's only statement, a nested if at
		// its own line.
		s.Else = in.block(s.Else, 0, s.Line(), id)
	case *ast.NumberForStmt:
		in.expr(s.Init)
		in.expr(s.Limit)
		in.expr(s.Step)
		s.Stmts = in.block(s.Stmts, s.Line(), s.Line(), id)
	case *ast.GenericForStmt:
		in.exprs(s.Exprs)
		s.Stmts = in.block(s.Stmts, s.Line(), s.Line(), id)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			in.expr(s.Name.Func)
			in.expr(s.Name.Receiver)
		}
		in.expr(s.Func)
	case *ast.ReturnStmt:
		in.exprs(s.Exprs)
	}
}

func (in *instrumenter) exprs(es []ast.Expr) {
	for _, e := range es {
		in.expr(e)
	}
}

// instrumentExpr instruments the bodies of the functions defined in e.
func (in *instrumenter) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.FunctionExpr:
		e.Stmts = in.block(e.Stmts, 0, 0, 0)
	case *ast.AttrGetExpr:
		in.expr(e.Object)
		in.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			in.expr(f.Key)
			in.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		in.expr(e.Func)
		in.expr(e.Receiver)
		in.exprs(e.Args)
	case *ast.LogicalOpExpr:
		in.expr(e.Lhs)
		in.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		in.expr(e.Lhs)
		in.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		in.expr(e.Lhs)
		in.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		in.expr(e.Lhs)
		in.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		in.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		in.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		in.expr(e.Expr)
	}
}
