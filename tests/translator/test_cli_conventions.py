"""kubectl habits and Unix manners: -o formats, --output-dir, -q, reports in pipes and at 100 columns,
gitignore-style --include/--exclude, colour and progress on a terminal, completion, the kubectl plugin."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubectl import require_kubectl
from translator_cli_support import Runner

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: ml}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 2}}
"""

BAD_COUNTS = """\
apiVersion: v1
kind: Pod
metadata: {name: half, namespace: ml}
spec:
  containers:
  - name: a
    image: cuda
    resources: {limits: {nvidia.com/gpu: 0.5}}
  - name: b
    image: cuda
    resources: {limits: {nvidia.com/gpu: -1}}
"""

CLI = [sys.executable, "-m", "dra_migrate.cli"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_o_yaml_prints_to_stdout_and_never_makes_a_directory(
    run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("convert", "-o", "yaml", "-", stdin=GPU_POD)
    assert result.code == 0, result.stderr
    assert [d["kind"] for d in yaml.safe_load_all(result.stdout)] == ["Pod", "ResourceClaimTemplate"]
    assert not (tmp_path / "yaml").exists()


def test_o_json_prints_one_list_like_kubectl(run_cli: Runner) -> None:
    result = run_cli("convert", "-o", "json", "-", stdin=GPU_POD)
    assert result.code == 0, result.stderr
    value = json.loads(result.stdout)
    assert value["kind"] == "List" and [i["kind"] for i in value["items"]] == ["Pod", "ResourceClaimTemplate"]


def test_o_with_a_directory_name_is_a_clear_usage_error(run_cli: Runner, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli("convert", "-o", str(tmp_path / "out"), "-", stdin=GPU_POD)
    assert exited.value.code == 2
    assert not (tmp_path / "out").exists()


def test_errors_and_summary_reach_stderr_in_a_pipe(run_cli: Runner, tmp_path: Path) -> None:
    # stderr is not a terminal here, so the details default to none: errors and the summary remain
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n")
    (tmp_path / "counts.yaml").write_text(BAD_COUNTS)
    paths = [str(tmp_path / name) for name in ("missing.yaml", "broken.yaml", "counts.yaml")]
    result = run_cli("convert", *paths)
    assert result.code == 2
    assert "missing.yaml" in result.stderr and "No such file or directory" in result.stderr
    assert "broken.yaml" in result.stderr and "invalid YAML at line" in result.stderr
    assert "0.5 is not a whole number of devices" in " ".join(result.stderr.split())  # wrapped at 100
    summary = result.stderr.splitlines()[-1]
    assert summary.startswith("3 files (0 changed, 1 unchanged, 3 with errors)") and "4 errors" in summary


def test_report_none_hides_only_details_and_quiet_only_leaves_errors(run_cli: Runner) -> None:
    warning_pod = GPU_POD.replace("nvidia.com/gpu: 2", "nvidia.com/gpu.shared: 1")
    shown = run_cli("convert", "--report", "text", "-", stdin=warning_pod)
    assert "warning" in shown.stderr
    hidden = run_cli("convert", "--report", "none", "-", stdin=warning_pod)
    assert hidden.stderr.startswith("1 file (") and hidden.stderr.count("\n") == 1
    quiet = run_cli("convert", "-q", "-", stdin=BAD_COUNTS)
    assert "error" in quiet.stderr and "1 file" not in quiet.stderr
    assert run_cli("convert", "-q", "-", stdin=warning_pod).stderr == ""


def test_report_file_alone_implies_a_format(run_cli: Runner, tmp_path: Path) -> None:
    run_cli("convert", "--report-file", str(tmp_path / "r.json"), "-", stdin=BAD_COUNTS)
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["filesWithErrors"] == 1
    run_cli("convert", "--report-file", str(tmp_path / "r.txt"), "-", stdin=BAD_COUNTS)
    assert "is not a whole number of devices" in " ".join((tmp_path / "r.txt").read_text().split())


def test_text_report_fits_100_columns_with_kind_name_and_relative_paths(
    run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = _tree(tmp_path, {"a/very/long/directory/name/for/the/manifests/of/a/team/pod.yaml": BAD_COUNTS})
    monkeypatch.chdir(deep)
    result = run_cli("convert", "--report", "text", "a")
    lines = result.stderr.splitlines()
    assert lines[0] == "a/very/long/directory/name/for/the/manifests/of/a/team/pod.yaml"
    assert lines[1] == "  Pod ml/half (document 1, line 1)"  # BAD_COUNTS starts with the Pod's apiVersion
    assert all(len(line) <= 100 for line in lines[:-1]), lines
    assert "1 file (0 changed, 1 unchanged, 1 with errors)" in lines[-1] and "2 errors" in lines[-1]


def test_exclude_and_include_follow_gitignore_rules(
    run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(
        tmp_path / "manifests",
        {
            "app.yaml": GPU_POD,
            "UPPER.YAML": GPU_POD,
            "sub/a.yaml": GPU_POD,
            "deep/sub/b.yaml": GPU_POD,
            "overlays/prod/c.yaml": GPU_POD,
            "overlays/dev/d.yaml": GPU_POD,
        },
    )
    monkeypatch.chdir(tmp_path)

    def read(*args: str) -> set[str]:
        result = run_cli("convert", "--report", "json", *args, "manifests")
        return {row["file"] for row in json.loads(result.stderr)["findings"]}

    everything = read()
    assert "manifests/UPPER.YAML" in everything and len(everything) == 6
    assert read("--exclude", "sub") == everything - {"manifests/sub/a.yaml", "manifests/deep/sub/b.yaml"}
    # anchored at the directory argument, written either way
    assert read("--exclude", "overlays/prod") == everything - {"manifests/overlays/prod/c.yaml"}
    assert read("--exclude", "manifests/overlays/prod") == everything - {"manifests/overlays/prod/c.yaml"}
    assert read("--include", "*.yaml", "--exclude", "overlays/") == everything - {
        "manifests/overlays/prod/c.yaml",
        "manifests/overlays/dev/d.yaml",
    }


def _run_on_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run the real CLI with stderr on a pseudo-terminal; returns its exit code and what it showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*CLI, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, env=env, cwd=cwd
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_colour_and_progress_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    _tree(tmp_path / "tree", {f"f{i:03}.yaml": GPU_POD for i in range(230)} | {"bad.yaml": BAD_COUNTS})
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")} | {"TERM": "xterm"}
    code, shown = _run_on_terminal(["convert", "--output-dir", "out", "tree"], env, tmp_path)
    assert code == 2
    assert "\x1b[31m" in shown  # errors in red
    assert "\r[" in shown and "/231" in shown  # the progress bar for a tree of more than 200 files
    code, shown = _run_on_terminal(["convert", "--output-dir", "out2", "tree"], env | {"NO_COLOR": "1"}, tmp_path)
    assert "\x1b[" not in shown
    piped = subprocess.run([*CLI, "convert", "--output-dir", "o3", "tree"], cwd=tmp_path, capture_output=True, env=env)
    assert b"\x1b[" not in piped.stderr and b"\r[" not in piped.stderr


def test_broken_pipe_exits_quietly(tmp_path: Path) -> None:
    _tree(tmp_path / "tree", {f"f{i:03}.yaml": GPU_POD for i in range(300)})
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{' '.join(CLI)} convert tree | head -n 2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.count("\n") == 2
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141


def test_shell_completion(tmp_path: Path) -> None:
    out = tmp_path / "completions"
    line = "dra-migrate convert --templ"
    env = os.environ | {
        "_ARGCOMPLETE": "1",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    subprocess.run([*CLI], env=env, check=True, capture_output=True, timeout=60)
    assert set(out.read_text().split("\x0b")) == {"--template-placement", "--templates-file"}


def test_works_as_a_kubectl_plugin(tmp_path: Path) -> None:
    kubectl = require_kubectl()
    plugin = Path(sys.executable).parent / "kubectl-dra_migrate"
    if not plugin.exists():
        pytest.fail(f"{plugin} is not installed: the kubectl-dra_migrate entry point is missing")
    env = os.environ | {"PATH": f"{plugin.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    (tmp_path / "pod.yaml").write_text(GPU_POD)
    done = subprocess.run(
        [str(kubectl), "dra-migrate", "convert", "-o", "json", "pod.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "List"
    usage = subprocess.run([str(kubectl), "dra-migrate", "convert", "-o"], env=env, capture_output=True, text=True)
    assert "kubectl dra-migrate convert" in usage.stderr
