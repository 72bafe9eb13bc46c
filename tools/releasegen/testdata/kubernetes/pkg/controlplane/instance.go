package controlplane

import (
	appsv1 "k8s.io/api/apps/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
)

var (
	stableAPIGroupVersionsEnabledByDefault = []schema.GroupVersion{
		appsv1.SchemeGroupVersion,
		resourcev1.SchemeGroupVersion,
	}
	betaAPIGroupVersionsDisabledByDefault = []schema.GroupVersion{
		resourcev1beta1.SchemeGroupVersion,
	}
)

func DefaultAPIResourceConfigSource() *serverstorage.ResourceConfig {
	ret := serverstorage.NewResourceConfig()
	ret.EnableVersions(stableAPIGroupVersionsEnabledByDefault...)
	ret.DisableVersions(betaAPIGroupVersionsDisabledByDefault...)
	// A resource of an enabled version can still be off by default.
	ret.DisableResources(resourcev1.SchemeGroupVersion.WithResource("widgetclasses"))
	return ret
}
