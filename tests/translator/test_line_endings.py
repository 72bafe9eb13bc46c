"""CRLF files keep CRLF everywhere: untouched documents, edited lines, appended templates."""

from __future__ import annotations

from pathlib import Path

from translator_cli_support import Runner

CRLF_STREAM = (
    "# settings\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\ndata:\r\n  k: v\r\n"
    "---\r\napiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: p\r\n  namespace: ml\r\nspec:\r\n"
    "  containers:\r\n  - name: c   # app\r\n    image: cuda\r\n    resources:\r\n      limits:\r\n"
    "        nvidia.com/gpu: 1\r\n"
)
UNTOUCHED = CRLF_STREAM.split("---\r\n")[0]


def _assert_crlf_only(data: bytes) -> None:
    assert data.count(b"\n") == data.count(b"\r\n") > 10, data


def test_in_place_keeps_crlf_in_every_line(run_cli: Runner, tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_bytes(CRLF_STREAM.encode())
    result = run_cli("convert", "--in-place", str(path))
    assert result.code == 0, result.stderr
    data = path.read_bytes()
    _assert_crlf_only(data)
    assert data.startswith(UNTOUCHED.encode())
    assert b"ResourceClaimTemplate" in data and b"# app" in data


def test_output_dir_and_stdout_keep_crlf(run_cli: Runner, tmp_path: Path) -> None:
    source = tmp_path / "in" / "app.yaml"
    source.parent.mkdir()
    source.write_bytes(CRLF_STREAM.encode())
    result = run_cli("convert", "--output-dir", str(tmp_path / "out"), str(source.parent))
    assert result.code == 0, result.stderr
    _assert_crlf_only((tmp_path / "out" / "app.yaml").read_bytes())
    result = run_cli("convert", str(source))
    _assert_crlf_only(result.stdout.encode())


def test_a_new_templates_file_takes_its_kustomizations_line_endings(run_cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_bytes(CRLF_STREAM.encode())
    (tmp_path / "kustomization.yaml").write_bytes(b"resources:\r\n- app.yaml\r\n")
    result = run_cli("convert", "--in-place", "--no-verify-render", str(tmp_path))
    assert result.code == 0, result.stderr
    templates = (tmp_path / "dra-migrate-templates.yaml").read_bytes()
    assert b"ResourceClaimTemplate" in templates
    assert templates.count(b"\n") == templates.count(b"\r\n") > 5, templates
    kustomization = (tmp_path / "kustomization.yaml").read_bytes()
    assert kustomization.count(b"\n") == kustomization.count(b"\r\n") == 3  # the resource added, CRLF kept
