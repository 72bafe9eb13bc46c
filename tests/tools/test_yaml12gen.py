"""The checked-in YAML 1.2 resolver table is exactly what tools/yaml12gen.py reads from the installed ruamel.yaml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "dra_migrate" / "manifests" / "yamltext" / "yaml12.py"


def test_checked_in_table_is_the_generated_one(tmp_path: Path) -> None:
    out = tmp_path / "yaml12.py"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "yaml12gen.py"), "-out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8"), "run `make yaml12`"
