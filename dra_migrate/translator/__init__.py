"""The offline translator, in stages that import only downward:

1. reading: which files a run reads, their bytes, bounds, and the text prefilter.
2. renders: kustomizations, the repository graph, real kustomize renders and their verification.
3. conversion: one file through the engine, templates and their placement, converted overlay patches.
4. results: what a run prints and reports.

Above them, the edge: the commands (cli, commands, krm), one run (driver, runner) and the modules that
work on a whole run (repository, sidefiles, writing). Shared text and file pieces are dra_migrate.manifests.
"""
