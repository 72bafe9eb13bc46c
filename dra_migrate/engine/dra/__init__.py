"""`resource.k8s.io` objects from any version to the one the target serves (docs/dra-api.md section 2).

Every input version is read into one hub form (the v1 shape), then written out in the target's
version, so v1 -> v1beta1 works as well as v1alpha2 -> v1 without pairwise converters.
"""
