// A small stand-in for k8s.io/kubernetes pkg/features, in the shapes releases 1.32 to 1.37 use.
package features

import (
	"k8s.io/apimachinery/pkg/util/version"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/component-base/featuregate"
)

const (
	DRAWidgets featuregate.Feature = "DRAWidgets"

	DRAGadgets = featuregate.Feature("DRAGadgets")

	// Not a DRA gate, but a type field references it.
	SharedThings featuregate.Feature = "SharedThings"

	Unrelated featuregate.Feature = "Unrelated"

	DynamicResourceAllocation featuregate.Feature = "DynamicResourceAllocation"

	DRAFuture featuregate.Feature = "DRAFuture"
)

var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	DRAWidgets: {
		{Version: version.MustParse("1.38"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.40"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
		{Version: version.MustParse("1.39"), Default: true, PreRelease: featuregate.Beta},
	},
	SharedThings: {
		{Version: version.MustParse("1.20"), Default: true, PreRelease: featuregate.Beta},
	},
	Unrelated: {
		{Version: version.MustParse("1.20"), Default: true, PreRelease: featuregate.Beta},
	},
	DynamicResourceAllocation: {
		{Version: version.MustParse("1.26"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.39.0"), Default: true},
	},
	DRAFuture: {
		{Version: version.MustParse("1.41"), Default: false, PreRelease: featuregate.Alpha},
	},
	genericfeatures.SomethingElse: {
		{Version: version.MustParse("1.20"), Default: true, PreRelease: featuregate.Beta},
	},
}

// The unversioned map of older trees.
var defaultKubernetesFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	DRAGadgets: {Default: false, PreRelease: featuregate.Deprecated},
}
