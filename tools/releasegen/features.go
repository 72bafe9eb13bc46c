package main

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"sort"
	"strings"
)

// Gate is a feature gate's state in one release.
type Gate struct {
	Stage   string // Alpha, Beta, GA, Deprecated (featuregate.prerelease names; "" is GA for old specs)
	Default bool
	Locked  bool
}

// gateSpec is one featuregate.FeatureSpec; Since is the minor it applies from (-1: unversioned).
type gateSpec struct {
	Since int
	Gate  Gate
}

// readGates reads pkg/features of a k8s.io/kubernetes tree and evaluates every gate at release minor:
// the last versioned spec whose Version <= minor, or the unversioned spec of older trees.
func readGates(kubernetesDir string, minor int) (map[string]Gate, error) {
	files, err := parseDir(filepath.Join(kubernetesDir, "pkg", "features"), func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	names := stringConsts(files)
	specs := map[string][]gateSpec{}
	err = topLevelVars(files, func(file *ast.File, varName string, value ast.Expr) error {
		lit, ok := value.(*ast.CompositeLit)
		if !ok {
			return nil
		}
		mapType, ok := lit.Type.(*ast.MapType)
		if !ok {
			return nil
		}
		_, valueType, ok := selector(mapType.Value)
		if !ok || (valueType != "VersionedSpecs" && valueType != "FeatureSpec") {
			return nil
		}
		for _, element := range lit.Elts {
			entry := element.(*ast.KeyValueExpr)
			key, ok := entry.Key.(*ast.Ident) // gates of other components are pkg.Name keys: not ours
			if !ok {
				continue
			}
			name, known := names[key.Name]
			if !known {
				return fmt.Errorf("%s: gate constant %s has no string value", varName, key.Name)
			}
			parsed, err := gateSpecs(entry.Value, valueType == "VersionedSpecs")
			if err != nil {
				return fmt.Errorf("%s[%s]: %v", varName, name, err)
			}
			specs[name] = append(specs[name], parsed...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: no feature gate maps found", filepath.Join(kubernetesDir, "pkg", "features"))
	}
	gates := map[string]Gate{}
	for name, list := range specs {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Since < list[j].Since })
		found := false
		var gate Gate
		for _, spec := range list {
			if spec.Since <= minor {
				gate, found = spec.Gate, true
			}
		}
		if found {
			gates[name] = gate
		}
	}
	return gates, nil
}

func gateSpecs(expr ast.Expr, versioned bool) ([]gateSpec, error) {
	lit, ok := expr.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("want a composite literal, got %T", expr)
	}
	if !versioned {
		spec, err := oneSpec(lit)
		spec.Since = -1
		return []gateSpec{spec}, err
	}
	var out []gateSpec
	for _, element := range lit.Elts {
		inner, ok := element.(*ast.CompositeLit)
		if !ok {
			return nil, fmt.Errorf("want a FeatureSpec literal, got %T", element)
		}
		spec, err := oneSpec(inner)
		if err != nil {
			return nil, err
		}
		if spec.Since < 0 {
			return nil, fmt.Errorf("versioned spec without Version")
		}
		out = append(out, spec)
	}
	return out, nil
}

// oneSpec reads {Version: version.MustParse("1.33"), Default: false, PreRelease: featuregate.Alpha, LockToDefault: true}.
func oneSpec(lit *ast.CompositeLit) (gateSpec, error) {
	spec := gateSpec{Since: -1}
	for _, element := range lit.Elts {
		field, ok := element.(*ast.KeyValueExpr)
		if !ok {
			return spec, fmt.Errorf("want keyed FeatureSpec fields")
		}
		key := field.Key.(*ast.Ident).Name
		var err error
		switch key {
		case "Version":
			spec.Since, err = specVersion(field.Value)
		case "Default":
			spec.Gate.Default, err = boolIdent(field.Value)
		case "LockToDefault":
			spec.Gate.Locked, err = boolIdent(field.Value)
		case "PreRelease":
			_, stage, ok := selector(field.Value)
			if !ok {
				err = fmt.Errorf("PreRelease: want featuregate.<Stage>")
			}
			spec.Gate.Stage = stage
		}
		if err != nil {
			return spec, fmt.Errorf("%s: %v", key, err)
		}
	}
	if spec.Gate.Stage == "" {
		spec.Gate.Stage = "GA" // featuregate.GA is the empty prerelease string
	}
	return spec, nil
}

// specVersion reads version.MustParse("1.33") as 33.
func specVersion(expr ast.Expr) (int, error) {
	call, ok := expr.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return 0, fmt.Errorf("want version.MustParse(\"1.N\")")
	}
	text, ok := stringLit(call.Args[0])
	if !ok {
		return 0, fmt.Errorf("want a string argument")
	}
	major, rest, _ := strings.Cut(text, ".")
	if major != "1" {
		return 0, fmt.Errorf("version %q is not 1.N", text)
	}
	minorText, _, _ := strings.Cut(rest, ".")
	return parseMinor("1." + minorText)
}

// draGate says whether a gate belongs to DRA by name; gates the types reference are added separately.
func draGate(name string) bool {
	return strings.HasPrefix(name, "DRA") || name == "DynamicResourceAllocation"
}
