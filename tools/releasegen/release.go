package main

import (
	"fmt"
	"os"
	"sort"
)

// Release holds what the engine needs to know about one Kubernetes release.
type Release struct {
	Pin        Pin
	Gates      map[string]Gate            // DRA gates and every gate the types or the quota evaluator use
	Served     map[string]map[string]bool // API version -> resource -> served by default
	Versions   map[string]*Version        // API version -> types of its served kinds
	QuotaGate  string                     // gate under which claims count against requests.<extended resource>
	AdminLabel string                     // namespace label that allows adminAccess
}

// readRelease reads a release from its k8s.io/kubernetes and k8s.io/api source trees.
func readRelease(pin Pin, kubernetesDir, apiDir string) (*Release, error) {
	minor, err := parseMinor(pin.Minor)
	if err != nil {
		return nil, err
	}
	allGates, err := readGates(kubernetesDir, minor)
	if err != nil {
		return nil, err
	}
	served, err := servedResources(kubernetesDir)
	if err != nil {
		return nil, err
	}
	versionDefaults, resourceDefaults, err := defaultVersions(kubernetesDir)
	if err != nil {
		return nil, err
	}
	release := &Release{Pin: pin, Gates: map[string]Gate{}, Served: map[string]map[string]bool{}, Versions: map[string]*Version{}}
	for version, resources := range served {
		on, listed := versionDefaults[version]
		if !listed {
			return nil, fmt.Errorf("%s: resource.k8s.io/%s is served but in no default list of instance.go", pin.Minor, version)
		}
		wanted := map[string]bool{}
		release.Served[version] = map[string]bool{}
		for _, resource := range resources {
			resourceOn, override := resourceDefaults[version+"/"+resource]
			if !override {
				resourceOn = on
			}
			release.Served[version][resource] = resourceOn
			wanted[resource] = true
		}
		types, err := readVersion(apiDir, version, func(kind string) bool { return wanted[resourceName(kind)] })
		if err != nil {
			return nil, err
		}
		for _, kind := range types.Kinds {
			delete(wanted, resourceName(kind))
		}
		for resource := range wanted {
			return nil, fmt.Errorf("%s: resource %s of resource.k8s.io/%s has no kind in k8s.io/api", pin.Minor, resource, version)
		}
		release.Versions[version] = types
	}
	if release.QuotaGate, err = quotaExtendedResourceGate(kubernetesDir); err != nil {
		return nil, err
	}
	used := map[string]bool{}
	if release.QuotaGate != "" {
		used[release.QuotaGate] = true
	}
	for _, version := range sortedVersions(release.Versions) {
		types := release.Versions[version]
		if types.AdminLabel != "" {
			release.AdminLabel = types.AdminLabel // ranked low to high: the most stable version wins
		}
		for _, fields := range types.Structs {
			for _, field := range fields {
				for _, gate := range field.Gates {
					used[gate] = true
				}
			}
		}
	}
	for name, gate := range allGates {
		if draGate(name) || used[name] {
			release.Gates[name] = gate
		}
	}
	for name := range used {
		if _, known := allGates[name]; !known {
			fmt.Fprintf(os.Stderr, "releasegen: %s: gate %s is referenced but not defined in that release\n", pin.Minor, name)
		}
	}
	return release, nil
}

// sortedVersions lists API versions from the least to the most stable.
func sortedVersions[T any](versions map[string]T) []string {
	out := make([]string, 0, len(versions))
	for version := range versions {
		out = append(out, version)
	}
	sort.Slice(out, func(i, j int) bool { return newerVersion(out[j], out[i]) })
	return out
}
