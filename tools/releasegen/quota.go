package main

import (
	"errors"
	"go/ast"
	"io/fs"
	"path/filepath"
)

// quotaExtendedResourceGate reads pkg/quota/v1/evaluator/core/resource_claims.go and returns the feature
// gate under which the claim evaluator charges claims to requests.<extended resource name>: the gate of an
// `if ...Enabled(features.<Gate>)` whose body, directly or through functions of the same file, builds a
// quota name from corev1.DefaultResourceRequestsPrefix ("requests."). "" when the release does not.
func quotaExtendedResourceGate(kubernetesDir string) (string, error) {
	path := filepath.Join(kubernetesDir, "pkg", "quota", "v1", "evaluator", "core", "resource_claims.go")
	file, err := parseFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	bodies := map[string]*ast.BlockStmt{}
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
			bodies[fn.Name.Name] = fn.Body
		}
	}
	gate := ""
	ast.Inspect(file, func(node ast.Node) bool {
		stmt, ok := node.(*ast.IfStmt)
		if !ok || gate != "" {
			return gate == ""
		}
		name := enabledGate(stmt.Cond)
		if name != "" && chargesRequests(stmt.Body, bodies, map[string]bool{}) {
			gate = name
		}
		return true
	})
	return gate, nil
}

// enabledGate returns X of a condition `<...>.Enabled(features.X)`.
func enabledGate(cond ast.Expr) string {
	call, ok := cond.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	if method, isSel := call.Fun.(*ast.SelectorExpr); !isSel || method.Sel.Name != "Enabled" {
		return ""
	}
	if pkg, gate, ok := selector(call.Args[0]); ok && pkg == "features" {
		return gate
	}
	return ""
}

// chargesRequests: the node mentions DefaultResourceRequestsPrefix, or calls a function of the file that does.
func chargesRequests(node ast.Node, bodies map[string]*ast.BlockStmt, seen map[string]bool) bool {
	found := false
	ast.Inspect(node, func(n ast.Node) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if x.Sel.Name == "DefaultResourceRequestsPrefix" {
				found = true
			}
		case *ast.CallExpr:
			name := ""
			switch fun := x.Fun.(type) {
			case *ast.Ident:
				name = fun.Name
			case *ast.SelectorExpr:
				name = fun.Sel.Name
			}
			if body, local := bodies[name]; local && !seen[name] {
				seen[name] = true
				found = chargesRequests(body, bodies, seen)
			}
		}
		return !found
	})
	return found
}
