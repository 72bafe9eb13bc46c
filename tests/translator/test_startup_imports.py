"""A one-file convert loads only what it uses: start-up is most of such a run (bench/translate.py).

Each module below costs a start milliseconds to import, and only some runs need it. dataclasses is
among them: creating a dataclass compiles its generated methods, about a millisecond each, so the
records a convert imports are NamedTuples or plain classes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: gpu
spec:
  containers:
  - name: main
    image: cuda:12
    resources:
      limits:
        nvidia.com/gpu: 2
"""
NOT_FOR_ONE_FILE = {
    "dataclasses": "records on the start-up path are NamedTuples or plain classes",
    "ruamel.yaml": "the fallback editor only; quoting reads the generated yaml12 table",
    "pathspec": "directory arguments only",
    "jsonschema": "config files only",
    "kubernetes_validate": "--validate only",
    "cel": "config files and --validate only",
    "multiprocessing": "trees of many files only",
    "hashlib": "template names hash with CPython's own SHA-256 module",
    "decimal": "counts that are not plain integers only",
    "difflib": "diff only",
    "tempfile": "runs that write files only",
    "signal": "runs that write files only",
    "textwrap": "reports with findings only",
    "dra_migrate.webhook.policy": "config files only",
    "dra_migrate.engine.dra.readers": "resource.k8s.io objects only",
}

_PROBE = """
import json, sys
from dra_migrate.cli import main
code = main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_a_one_file_convert_loads_only_what_it_uses(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(GPU_POD, encoding="utf-8")
    modules = loaded_by("convert", "--report", "none", str(manifest))
    assert "dra_migrate.translator.conversion.pipeline" in modules  # the probe did convert
    loaded = {name: why for name, why in NOT_FOR_ONE_FILE.items() if name in modules}
    assert loaded == {}, "a one-file convert imported modules it does not need"


def test_a_directory_run_loads_pathspec(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(GPU_POD, encoding="utf-8")
    assert "pathspec" in loaded_by("convert", "--report", "none", str(tmp_path))
