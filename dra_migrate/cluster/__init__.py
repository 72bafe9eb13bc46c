"""What a cluster holds that decides a migration: read live (get and list only) or from a snapshot
directory, into one ClusterState that `plan`, `convert` and `diff` read the same way."""
