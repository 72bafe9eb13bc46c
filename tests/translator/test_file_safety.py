"""Files are safe: symlinks written through once, no temporary files left by SIGTERM or SIGINT,
hostile input (alias bombs, deep nesting, huge files) refused fast with an error naming the file."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from polling import piped_output, wait_while_running
from translator_cli_support import Runner

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: ml}
spec:
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def _cli(*args: str, code: str = "") -> list[str]:
    program = f"import sys\n{code}\nfrom dra_migrate.cli import main\nsys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", program, *args]


def test_in_place_writes_through_a_symlink_once(run_cli: Runner, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    real = tree / "real.yaml"
    real.write_text(GPU_POD)
    (tree / "link.yaml").symlink_to("real.yaml")
    outside = tmp_path / "shared.yaml"
    outside.write_text(GPU_POD.replace("name: gpu", "name: shared"))
    (tree / "outside.yaml").symlink_to(outside)
    result = run_cli("convert", "--in-place", "--report", "json", str(tree))
    assert result.code == 0, result.stderr
    assert (tree / "link.yaml").is_symlink() and (tree / "outside.yaml").is_symlink()
    assert real.read_text().count("kind: ResourceClaimTemplate") == 1
    assert "kind: ResourceClaimTemplate" in outside.read_text()
    rows = json.loads(result.stderr)["findings"]
    assert any(r["rule"] == "skipped" and "symbolic link" in r["message"] for r in rows)
    assert json.loads(result.stderr)["summary"]["filesChanged"] == 2


def _tmp_files(tree: Path) -> list[Path]:
    return list(tree.glob(".*.tmp"))


def _interruptible() -> None:
    """Ctrl-C as in a foreground shell: a suite started in the background (`make test &`) has
    SIGINT ignored, the child would inherit that, and Python keeps an inherited SIG_IGN."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_during_in_place_write_leaves_no_temporary_file(tmp_path: Path, signum: int, code: int) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pod.yaml").write_text(GPU_POD)
    # A slow disk: fsync blocks, so the signal arrives while the temporary file exists. It sleeps in
    # short slices: a signal that lands just before one long sleep starts is only handled when it
    # ends (CPython checks for signals between bytecodes and on EINTR), and the test would time out.
    slow = "import os, time\nos.fsync = lambda fd: [time.sleep(0.05) for _ in range(1200)]"
    process = subprocess.Popen(
        _cli("convert", "--in-place", str(tree), code=slow),
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    wait_while_running(
        lambda: _tmp_files(tree),
        process.poll,
        what="a temporary file",
        log=lambda: piped_output(process),
        interval=0.02,
    )
    process.send_signal(signum)
    assert process.wait(timeout=30) == code
    assert process.stderr is not None and b"Traceback" not in process.stderr.read()
    assert _tmp_files(tree) == []
    assert (tree / "pod.yaml").read_text() == GPU_POD


def _bomb() -> str:
    lines = ["apiVersion: v1", "kind: Pod", "metadata: {name: bomb}", "spec:", "  containers:", "  - name: c"]
    lines += ["    image: x", "    resources: {limits: {nvidia.com/gpu: 1}}", "    args:"]
    lines.append('    - &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for previous, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"    - &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _limited(max_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))


def _run_limited(tmp_path: Path, name: str, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / name
    path.write_text(text)
    return subprocess.run(
        _cli("convert", *args, str(path)),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: _limited(3 << 30),
        cwd=tmp_path,
    )


def test_alias_bomb_fails_fast_with_a_clear_error(tmp_path: Path) -> None:
    text = _bomb()
    assert len(text.encode()) < 600
    started = time.monotonic()
    done = _run_limited(tmp_path, "bomb.yaml", text)
    assert time.monotonic() - started < 30
    assert done.returncode == 2
    assert "bomb.yaml" in done.stderr and "excessive aliasing" in done.stderr and "Traceback" not in done.stderr


def test_self_containing_anchor_is_refused(tmp_path: Path) -> None:
    text = GPU_POD + "  nodeSelector: &loop {a: *loop}\n"
    done = _run_limited(tmp_path, "loop.yaml", text)
    assert done.returncode == 2 and "loop.yaml" in done.stderr and "contains an alias of itself" in done.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", GPU_POD + "  overhead: {a: " + "[" * 5000 + "]" * 5000 + "}\n"),
        ("block.yaml", GPU_POD + "  overhead:\n" + "".join("  " * (i + 2) + "a:\n" for i in range(5000))),
        ("deep.json", '{"apiVersion": "v1", "kind": "Pod", "spec": ' + "[" * 5000 + "]" * 5000 + "}"),
    ],
)
def test_deep_nesting_is_a_clear_error(tmp_path: Path, name: str, text: str) -> None:
    done = _run_limited(tmp_path, name, text)
    assert done.returncode == 2
    assert name in done.stderr and "nested deeper than 500 levels" in done.stderr
    assert "Recursion" not in done.stderr and "Traceback" not in done.stderr


def test_nesting_within_the_bound_converts(run_cli: Runner) -> None:
    deep = "{a: " * 450 + "1" + "}" * 450
    result = run_cli("convert", "-", stdin=GPU_POD + f"  overhead: {{x: {deep}}}\n")
    assert result.code == 0, result.stderr
    assert "resourceClaimTemplateName" in result.stdout


def test_file_over_the_size_bound_is_refused_by_name(run_cli: Runner, tmp_path: Path) -> None:
    big = tmp_path / "huge.yaml"
    big.write_text(GPU_POD + "# " + "x" * (2 << 20) + "\n")
    result = run_cli("convert", "--max-file-size", "1", str(big))
    assert result.code == 2
    assert "huge.yaml" in result.stderr and "larger than 1 MiB" in result.stderr
    assert big.stat().st_size > 1 << 20


def test_a_pipe_given_as_a_path_is_read_once_and_converted(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(GPU_POD)
    program = "import sys\nfrom dra_migrate.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        ["bash", "-c", f'{sys.executable} -c "$0" convert <(cat pod.yaml)', program],  # process substitution
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "resourceClaimTemplateName" in done.stdout and "kind: ResourceClaimTemplate" in done.stdout
