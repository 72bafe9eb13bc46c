package main

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"strings"
)

// servedResources reads pkg/registry/resource/rest/storage_resource.go: every
// `if resource := "x"; ...ResourceEnabled(<resourcevN>.SchemeGroupVersion.WithResource(resource))`
// registers resource x in API version vN. Result: version -> resources.
func servedResources(kubernetesDir string) (map[string][]string, error) {
	path := filepath.Join(kubernetesDir, "pkg", "registry", "resource", "rest", "storage_resource.go")
	file, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	aliases := imports(file)
	served := map[string][]string{}
	ast.Inspect(file, func(node ast.Node) bool {
		stmt, ok := node.(*ast.IfStmt)
		if !ok {
			return true
		}
		assign, ok := stmt.Init.(*ast.AssignStmt)
		if !ok || len(assign.Lhs) != 1 || len(assign.Rhs) != 1 {
			return true
		}
		resource, ok := stringLit(assign.Rhs[0])
		if !ok {
			return true
		}
		if version := schemeVersion(stmt.Cond, aliases); version != "" {
			served[version] = append(served[version], resource)
		}
		return true
	})
	if len(served) == 0 {
		return nil, fmt.Errorf("%s: no resource registrations found", path)
	}
	return served, nil
}

// schemeVersion finds <alias>.SchemeGroupVersion inside expr and returns the resource.k8s.io version.
func schemeVersion(expr ast.Node, aliases map[string]string) string {
	version := ""
	ast.Inspect(expr, func(node ast.Node) bool {
		if e, ok := node.(ast.Expr); ok && version == "" {
			if pkg, name, ok := selector(e); ok && name == "SchemeGroupVersion" {
				version = apiVersion(aliases[pkg])
			}
		}
		return version == ""
	})
	return version
}

// defaultVersions reads pkg/controlplane/instance.go: the group versions in the *EnabledByDefault and
// *DisabledByDefault lists, and resource-level EnableResources/DisableResources calls.
// Result: version -> on by default, and "version/resource" -> on by default for resource-level overrides.
func defaultVersions(kubernetesDir string) (map[string]bool, map[string]bool, error) {
	path := filepath.Join(kubernetesDir, "pkg", "controlplane", "instance.go")
	file, err := parseFile(path)
	if err != nil {
		return nil, nil, err
	}
	aliases := imports(file)
	versions := map[string]bool{}
	err = topLevelVars([]*ast.File{file}, func(_ *ast.File, name string, value ast.Expr) error {
		enabled := strings.HasSuffix(name, "EnabledByDefault")
		if !enabled && !strings.HasSuffix(name, "DisabledByDefault") {
			return nil
		}
		lit, ok := value.(*ast.CompositeLit)
		if !ok {
			return nil
		}
		for _, element := range lit.Elts {
			if version := schemeVersion(element, aliases); version != "" {
				if previous, seen := versions[version]; seen && previous != enabled {
					return fmt.Errorf("%s: resource.k8s.io/%s is both enabled and disabled by default", path, version)
				}
				versions[version] = enabled
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	resources := map[string]bool{}
	ast.Inspect(file, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok {
			return true
		}
		_, method, ok := selector(call.Fun)
		if !ok || (method != "EnableResources" && method != "DisableResources") {
			return true
		}
		for _, arg := range call.Args {
			inner, ok := arg.(*ast.CallExpr)
			if !ok || len(inner.Args) != 1 {
				continue
			}
			version := schemeVersion(inner.Fun, aliases)
			resource, isLit := stringLit(inner.Args[0])
			if version != "" && isLit {
				resources[version+"/"+resource] = method == "EnableResources"
			}
		}
		return true
	})
	if len(versions) == 0 {
		return nil, nil, fmt.Errorf("%s: no resource.k8s.io group versions in the default lists", path)
	}
	return versions, resources, nil
}
