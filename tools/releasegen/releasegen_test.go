package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/table.py from the fixture")

// The fixture under testdata is a small tree in the shapes of k8s.io/kubernetes and k8s.io/api.
func fixtureRelease(t *testing.T) *Release {
	t.Helper()
	release, err := readRelease(Pin{Minor: "1.39", Kubernetes: "v1.39.1", API: "v0.39.1"}, "testdata/kubernetes", "testdata/api")
	if err != nil {
		t.Fatal(err)
	}
	return release
}

func TestGatesTakeTheLastSpecUpToTheRelease(t *testing.T) {
	got := fixtureRelease(t).Gates
	want := map[string]Gate{
		"DRAWidgets":                {Stage: "Beta", Default: true},        // 1.38 alpha, 1.39 beta, 1.40 GA: out of order in the source
		"DRAGadgets":                {Stage: "Deprecated", Default: false}, // unversioned map
		"SharedThings":              {Stage: "Beta", Default: true},        // not DRA by name, but a field's gate
		"DynamicResourceAllocation": {Stage: "GA", Default: true},          // no PreRelease: GA; Version "1.39.0"
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gates:\n got %v\nwant %v", got, want)
	}
}

func TestGatesBeforeAnySpecAreAbsent(t *testing.T) {
	gates, err := readGates("testdata/kubernetes", 37)
	if err != nil {
		t.Fatal(err)
	}
	if _, found := gates["DRAWidgets"]; found {
		t.Errorf("DRAWidgets starts in 1.38 but is present in 1.37: %v", gates["DRAWidgets"])
	}
	if got := gates["DynamicResourceAllocation"]; got != (Gate{Stage: "Alpha"}) {
		t.Errorf("DynamicResourceAllocation in 1.37 = %v", got)
	}
}

func TestServedVersionsAndDefaults(t *testing.T) {
	got := fixtureRelease(t).Served
	want := map[string]map[string]bool{
		"v1":      {"widgets": true, "widgetclasses": false}, // DisableResources overrides the version
		"v1beta1": {"widgets": false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("served:\n got %v\nwant %v", got, want)
	}
}

func TestTypesOfServedKinds(t *testing.T) {
	release := fixtureRelease(t)
	v1 := release.Versions["v1"]
	if want := []string{"Widget", "WidgetClass"}; !reflect.DeepEqual(v1.Kinds, want) {
		t.Errorf("v1 kinds = %v, want %v", v1.Kinds, want)
	}
	if want := []string{"Widget"}; !reflect.DeepEqual(release.Versions["v1beta1"].Kinds, want) {
		t.Errorf("v1beta1 kinds = %v, want %v (WidgetClass is not served there)", release.Versions["v1beta1"].Kinds, want)
	}
	wantSpec := []Field{
		{Name: "size", Type: "string", Shape: ""},
		{Name: "parts", Type: "Part", Shape: "[]", Gates: []string{"DRAWidgets", "SharedThings"}},
		{Name: "labels", Type: "Part", Shape: "map*"},
		{Name: "amount", Type: "Quantity", Shape: "*"},
		{Name: "nodes", Type: "NodeSelector", Shape: "*"},
		{Name: "opaque", Type: "string", Shape: "*", Gates: []string{"DRAGadgets"}}, // inlined Config
	}
	if got := v1.Structs["WidgetSpec"]; !equalFields(got, wantSpec) {
		t.Errorf("WidgetSpec:\n got %+v\nwant %+v", got, wantSpec)
	}
	wantWidget := []Field{{Name: "metadata", Type: "ObjectMeta"}, {Name: "spec", Type: "WidgetSpec"}}
	if got := v1.Structs["Widget"]; !equalFields(got, wantWidget) {
		t.Errorf("Widget (status left out):\n got %+v\nwant %+v", got, wantWidget)
	}
	if _, found := v1.Structs["WidgetStatus"]; found {
		t.Error("WidgetStatus is only reachable through status and must be left out")
	}
	if _, found := v1.Structs["WidgetList"]; found {
		t.Error("list types are not kinds")
	}
}

func equalFields(a, b []Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		sameGates := len(a[i].Gates) == len(b[i].Gates) && (len(a[i].Gates) == 0 || reflect.DeepEqual(a[i].Gates, b[i].Gates))
		if a[i].Name != b[i].Name || a[i].Type != b[i].Type || a[i].Shape != b[i].Shape || !sameGates {
			return false
		}
	}
	return true
}

func TestLifecycleLabelAndQuota(t *testing.T) {
	release := fixtureRelease(t)
	if got := release.Versions["v1beta1"].Lifecycle["Widget"]; got != [3]int{38, 41, 44} {
		t.Errorf("v1beta1 Widget lifecycle = %v", got)
	}
	if got := release.Versions["v1"].Lifecycle; !reflect.DeepEqual(got, map[string][3]int{"Widget": {39, 0, 0}, "WidgetClass": {}}) {
		t.Errorf("v1 lifecycle = %v", got)
	}
	if release.AdminLabel != "widgets.example.com/admin-v1" {
		t.Errorf("admin label = %q, want the most stable version's", release.AdminLabel)
	}
	if release.QuotaGate != "DRAWidgets" {
		t.Errorf("quota gate = %q: want the gate whose block reaches DefaultResourceRequestsPrefix", release.QuotaGate)
	}
}

func TestPythonModuleMatchesGolden(t *testing.T) {
	text := emitPython([]*Release{fixtureRelease(t)})
	golden := filepath.Join("testdata", "table.py")
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("emitted module differs from %s (go test -update rewrites it):\n%s", golden, text)
	}
}

func TestDedupeKeepsOneCopyOfIdenticalStructs(t *testing.T) {
	first, second := fixtureRelease(t), fixtureRelease(t)
	second.Pin = Pin{Minor: "1.40", Kubernetes: "v1.40.0", API: "v0.40.0"}
	part := second.Versions["v1"].Structs["Part"]
	second.Versions["v1"].Structs["Part"] = append(part[:len(part):len(part)], Field{Name: "extra", Type: "bool", Shape: "*"})
	ids, structs := dedupeStructs([]*Release{first, second})
	if ids["1.39/v1/WidgetSpec"] != ids["1.40/v1/WidgetSpec"] {
		t.Error("identical structs of two releases must share one entry")
	}
	if ids["1.39/v1/Part"] != "Part" || ids["1.40/v1/Part"] != "Part#2" {
		t.Errorf("changed struct ids: %q, %q", ids["1.39/v1/Part"], ids["1.40/v1/Part"])
	}
	tableIDs, _ := dedupeTables([]*Release{first, second}, ids)
	if tableIDs["1.39/v1beta1"] != "v1beta1@1.39" || tableIDs["1.40/v1beta1"] != "v1beta1@1.39" || tableIDs["1.40/v1"] != "v1@1.40" {
		t.Errorf("table ids: %v", tableIDs)
	}
	if len(structs) == 0 {
		t.Error("no structs")
	}
}

func TestVersionOrderAndResourceNames(t *testing.T) {
	got := sortedVersions(map[string]bool{"v1": true, "v1alpha3": true, "v1beta2": true, "v1beta1": true, "v2alpha1": true})
	want := []string{"v1alpha3", "v2alpha1", "v1beta1", "v1beta2", "v1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("version order = %v, want %v", got, want)
	}
	for kind, resource := range map[string]string{
		"DeviceClass": "deviceclasses", "ResourceClaim": "resourceclaims", "DeviceTaintRule": "devicetaintrules",
		"ResourcePoolStatusRequest": "resourcepoolstatusrequests", "Policy": "policies",
	} {
		if got := resourceName(kind); got != resource {
			t.Errorf("resourceName(%s) = %s, want %s", kind, got, resource)
		}
	}
}

func TestPins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "releases.txt")
	pins := []Pin{{"1.40", "v1.40.1", "v0.40.1"}, {"1.39", "v1.39.2", "v0.39.2"}}
	if err := writePins(path, pins); err != nil {
		t.Fatal(err)
	}
	got, err := readPins(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Pin{pins[1], pins[0]}; !reflect.DeepEqual(got, want) {
		t.Errorf("pins = %v, want sorted %v", got, want)
	}
	if err := os.WriteFile(path, []byte("1.39 v1.39.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readPins(path); err == nil {
		t.Error("a line without the api version must be an error")
	}
	if _, _, _, ok := semver("v1.34.0-rc.1"); ok {
		t.Error("pre-releases are not pinned")
	}
}
