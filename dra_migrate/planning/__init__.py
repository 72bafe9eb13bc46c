"""`dra-migrate plan`: what a cluster's migration to DRA needs, from a ClusterState (dra_migrate.cluster).
Everything here is pure; reading the cluster and writing files are at the edges (planning.command)."""
