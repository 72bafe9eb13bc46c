package main

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Field is one JSON field of an API struct.
type Field struct {
	Name  string   // JSON name
	Type  string   // a struct of the same version, a Go basic type, or an external type's name (Quantity)
	Shape string   // "" value, "*" pointer, "[]" list, "map" map; composed outside in ("[]*")
	Gates []string // +featureGate= tags of the field's comment
}

// Version is what one resource.k8s.io API version of a release holds.
type Version struct {
	Kinds      []string           // top-level kinds (types with TypeMeta and ObjectMeta)
	Structs    map[string][]Field // every struct reachable from the kinds' non-status fields, by Go name
	Lifecycle  map[string][3]int  // kind -> minors introduced, deprecated, removed (0: not generated)
	AdminLabel string             // DRAAdminNamespaceLabelKey
}

var builtinTypes = map[string]bool{
	"string": true, "bool": true, "byte": true, "int": true, "int32": true, "int64": true,
	"uint": true, "uint32": true, "uint64": true, "float32": true, "float64": true,
}

// typeFile says whether a file of k8s.io/api/resource/<v> declares API types (generated code does not).
func typeFile(name string) bool {
	return !strings.HasPrefix(name, "zz_generated") && !strings.HasPrefix(name, "generated.") &&
		!strings.HasSuffix(name, "_generated.go")
}

// readVersion reads the types of k8s.io/api/resource/<version> in an api tree, for the kinds keep accepts.
func readVersion(apiDir, version string, keep func(kind string) bool) (*Version, error) {
	dir := filepath.Join(apiDir, "resource", version)
	files, err := parseDir(dir, typeFile)
	if err != nil {
		return nil, err
	}
	specs := map[string]*ast.TypeSpec{}
	for _, file := range files {
		for _, decl := range file.Decls {
			if gen, ok := decl.(*ast.GenDecl); ok {
				for _, spec := range gen.Specs {
					if typeSpec, ok := spec.(*ast.TypeSpec); ok {
						specs[typeSpec.Name.Name] = typeSpec
					}
				}
			}
		}
	}
	out := &Version{Structs: map[string][]Field{}, AdminLabel: stringConsts(files)["DRAAdminNamespaceLabelKey"]}
	for name, spec := range specs {
		if isKind(spec) && keep(name) {
			out.Kinds = append(out.Kinds, name)
		}
	}
	sort.Strings(out.Kinds)
	reader := typeReader{specs: specs, out: out.Structs}
	for _, kind := range out.Kinds {
		if err := reader.visit(kind, true); err != nil {
			return nil, fmt.Errorf("%s: %v", dir, err)
		}
	}
	out.Lifecycle, err = readLifecycle(filepath.Join(dir, "zz_generated.prerelease-lifecycle.go"), out.Kinds)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// isKind: a struct embedding metav1.TypeMeta with an ObjectMeta (List types have ListMeta).
func isKind(spec *ast.TypeSpec) bool {
	structType, ok := spec.Type.(*ast.StructType)
	if !ok {
		return false
	}
	typeMeta, objectMeta := false, false
	for _, field := range structType.Fields.List {
		if _, name, ok := selector(field.Type); ok {
			typeMeta = typeMeta || (name == "TypeMeta" && len(field.Names) == 0)
			objectMeta = objectMeta || name == "ObjectMeta"
		}
	}
	return typeMeta && objectMeta
}

type typeReader struct {
	specs map[string]*ast.TypeSpec
	out   map[string][]Field
}

// visit records struct name and every struct its fields reach; a kind's status is left out.
func (r *typeReader) visit(name string, kind bool) error {
	if _, done := r.out[name]; done {
		return nil
	}
	fields, err := r.fields(name, kind)
	if err != nil {
		return err
	}
	r.out[name] = fields
	for _, field := range fields {
		if spec, local := r.specs[field.Type]; local {
			if _, isStruct := spec.Type.(*ast.StructType); isStruct {
				if err := r.visit(field.Type, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *typeReader) fields(name string, kind bool) ([]Field, error) {
	structType, ok := r.specs[name].Type.(*ast.StructType)
	if !ok {
		return nil, fmt.Errorf("type %s is not a struct", name)
	}
	var out []Field
	for _, field := range structType.Fields.List {
		jsonName, inline := jsonTag(field)
		if jsonName == "-" {
			continue
		}
		if inline || (len(field.Names) == 0 && jsonName == "") {
			ident, local := field.Type.(*ast.Ident)
			if !local {
				continue // metav1.TypeMeta: apiVersion and kind
			}
			embedded, err := r.fields(ident.Name, false)
			if err != nil {
				return nil, err
			}
			out = append(out, embedded...)
			continue
		}
		if kind && jsonName == "status" {
			continue
		}
		if len(field.Names) > 0 && !field.Names[0].IsExported() {
			continue
		}
		typeName, shape, err := r.resolve(field.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", name, jsonName, err)
		}
		out = append(out, Field{Name: jsonName, Type: typeName, Shape: shape, Gates: featureGates(field.Doc)})
	}
	return out, nil
}

// resolve reduces a field type to (element type, shape); local named non-struct types are followed.
func (r *typeReader) resolve(expr ast.Expr) (string, string, error) {
	switch t := expr.(type) {
	case *ast.StarExpr:
		name, shape, err := r.resolve(t.X)
		return name, "*" + shape, err
	case *ast.ArrayType:
		name, shape, err := r.resolve(t.Elt)
		return name, "[]" + shape, err
	case *ast.MapType:
		name, shape, err := r.resolve(t.Value)
		return name, "map" + shape, err
	case *ast.SelectorExpr:
		return t.Sel.Name, "", nil
	case *ast.InterfaceType:
		return "any", "", nil
	case *ast.Ident:
		if builtinTypes[t.Name] {
			return t.Name, "", nil
		}
		spec, ok := r.specs[t.Name]
		if !ok {
			return "", "", fmt.Errorf("unknown type %s", t.Name)
		}
		if _, isStruct := spec.Type.(*ast.StructType); isStruct {
			return t.Name, "", nil
		}
		return r.resolve(spec.Type)
	}
	return "", "", fmt.Errorf("unsupported field type %T", expr)
}

// jsonTag returns the JSON name and whether the field is inlined.
func jsonTag(field *ast.Field) (string, bool) {
	if field.Tag == nil {
		return "", false
	}
	raw, err := strconv.Unquote(field.Tag.Value)
	if err != nil {
		return "", false
	}
	name, options, _ := strings.Cut(reflect.StructTag(raw).Get("json"), ",")
	return name, strings.Contains(","+options+",", ",inline,")
}

// featureGates reads "+featureGate=A,B" lines of a field comment.
func featureGates(doc *ast.CommentGroup) []string {
	var gates []string
	if doc == nil {
		return gates
	}
	for _, comment := range doc.List {
		text := strings.TrimSpace(strings.TrimPrefix(comment.Text, "//"))
		if value, ok := strings.CutPrefix(text, "+featureGate="); ok {
			for _, gate := range strings.Split(value, ",") {
				if gate = strings.TrimSpace(gate); gate != "" {
					gates = append(gates, gate)
				}
			}
		}
	}
	return gates
}

// readLifecycle reads APILifecycleIntroduced/Deprecated/Removed of each kind ("return 1, 35").
func readLifecycle(path string, kinds []string) (map[string][3]int, error) {
	out := map[string][3]int{}
	for _, kind := range kinds {
		out[kind] = [3]int{}
	}
	file, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	slots := map[string]int{"APILifecycleIntroduced": 0, "APILifecycleDeprecated": 1, "APILifecycleRemoved": 2}
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 || fn.Body == nil || len(fn.Body.List) != 1 {
			continue
		}
		slot, known := slots[fn.Name.Name]
		star, isStar := fn.Recv.List[0].Type.(*ast.StarExpr)
		if !known || !isStar {
			continue
		}
		kind := star.X.(*ast.Ident).Name
		values, ok := out[kind]
		ret, isReturn := fn.Body.List[0].(*ast.ReturnStmt)
		if !ok || !isReturn || len(ret.Results) != 2 {
			continue
		}
		major, okMajor := intLit(ret.Results[0])
		minor, okMinor := intLit(ret.Results[1])
		if !okMajor || !okMinor || major != 1 {
			return nil, fmt.Errorf("%s: %s.%s: want return 1, N", path, kind, fn.Name.Name)
		}
		values[slot] = minor
		out[kind] = values
	}
	return out, nil
}

// resourceName is the REST resource of a kind: lower case plural (DeviceClass -> deviceclasses).
func resourceName(kind string) string {
	lower := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "ch"):
		return lower + "es"
	case strings.HasSuffix(lower, "y") && !strings.HasSuffix(lower, "ay") && !strings.HasSuffix(lower, "ey"):
		return strings.TrimSuffix(lower, "y") + "ies"
	}
	return lower + "s"
}
