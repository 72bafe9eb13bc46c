package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// parseFile parses one Go file with comments.
func parseFile(path string) (*ast.File, error) {
	return parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
}

// parseDir parses the non-test Go files of a directory that keep(name) accepts, in name order.
func parseDir(dir string, keep func(name string) bool) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || !keep(name) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	files := make([]*ast.File, 0, len(names))
	for _, name := range names {
		file, err := parseFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	return files, nil
}

// imports maps each import's local name to its path.
func imports(file *ast.File) map[string]string {
	out := map[string]string{}
	for _, spec := range file.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := filepath.Base(path)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		out[name] = path
	}
	return out
}

// stringLit is the value of a string literal, also inside a conversion (featuregate.Feature("X")).
func stringLit(expr ast.Expr) (string, bool) {
	if call, ok := expr.(*ast.CallExpr); ok && len(call.Args) == 1 {
		if _, _, isType := selector(call.Fun); isType {
			expr = call.Args[0]
		}
	}
	lit, ok := expr.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	value, err := strconv.Unquote(lit.Value)
	return value, err == nil
}

// intLit is the value of an integer literal.
func intLit(expr ast.Expr) (int, bool) {
	lit, ok := expr.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, false
	}
	value, err := strconv.Atoi(lit.Value)
	return value, err == nil
}

// boolIdent is the value of the identifiers true and false.
func boolIdent(expr ast.Expr) (bool, error) {
	ident, ok := expr.(*ast.Ident)
	if !ok || (ident.Name != "true" && ident.Name != "false") {
		return false, fmt.Errorf("want true or false, got %T", expr)
	}
	return ident.Name == "true", nil
}

// selector splits pkg.Name; ok is false for other expressions.
func selector(expr ast.Expr) (pkg, name string, ok bool) {
	sel, isSel := expr.(*ast.SelectorExpr)
	if !isSel {
		return "", "", false
	}
	ident, isIdent := sel.X.(*ast.Ident)
	if !isIdent {
		return "", "", false
	}
	return ident.Name, sel.Sel.Name, true
}

// stringConsts collects the package's constants with string literal values, by name.
func stringConsts(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, file := range files {
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				value := spec.(*ast.ValueSpec)
				for i, name := range value.Names {
					if i < len(value.Values) {
						if text, ok := stringLit(value.Values[i]); ok {
							out[name.Name] = text
						}
					}
				}
			}
		}
	}
	return out
}

// topLevelVars yields each package-level variable with an initial value.
func topLevelVars(files []*ast.File, visit func(file *ast.File, name string, value ast.Expr) error) error {
	for _, file := range files {
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				value := spec.(*ast.ValueSpec)
				for i, name := range value.Names {
					if i < len(value.Values) {
						if err := visit(file, name.Name, value.Values[i]); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// apiVersion is the Kubernetes version string ("v1beta2") of a resource.k8s.io import path, or "".
func apiVersion(importPath string) string {
	version, ok := strings.CutPrefix(importPath, "k8s.io/api/resource/")
	if !ok || strings.Contains(version, "/") {
		return ""
	}
	return version
}

// versionRank orders Kubernetes API versions as the apiserver does: GA > beta > alpha, then by number.
func versionRank(version string) [3]int {
	rest := strings.TrimPrefix(version, "v")
	stage, level := 3, 0
	for i, name := range []string{"alpha", "beta"} {
		if before, after, found := strings.Cut(rest, name); found {
			rest, stage = before, i+1
			level, _ = strconv.Atoi(after)
		}
	}
	major, _ := strconv.Atoi(rest)
	return [3]int{stage, major, level}
}

// newerVersion reports whether API version a ranks above b.
func newerVersion(a, b string) bool {
	x, y := versionRank(a), versionRank(b)
	for i := range x {
		if x[i] != y[i] {
			return x[i] > y[i]
		}
	}
	return false
}
