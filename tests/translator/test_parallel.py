"""Converting a tree on several cores gives exactly the output of a one-core run (the real CLI)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from dra_migrate.translator import runner

CORPUS_DIRS = ("legacy", "dra-versions", "negative", "templated")


def _tree(corpus: Path, root: Path) -> None:
    """Corpus files, copied and mixed into multi-document files over several directories, plus JSON.

    Many files need the same ResourceClaimTemplate, so which file writes it depends on the order.
    """
    files = sorted(p for d in CORPUS_DIRS for p in (corpus / d).rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    rng = random.Random(5)
    for index in range(90):
        picked = rng.sample(files, 3)
        directory = root / f"team-{index % 4}" / f"app-{index // 9}"
        directory.mkdir(parents=True, exist_ok=True)
        if picked[0].suffix == ".json":
            (directory / f"m{index:03d}.json").write_bytes(picked[0].read_bytes())
            continue
        texts = [p.read_text(encoding="utf-8") for p in picked if p.suffix != ".json"]
        (directory / f"m{index:03d}.yaml").write_text("\n---\n".join(texts), encoding="utf-8")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dra_migrate", *args], capture_output=True, text=True, check=False)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_jobs_write_the_same_tree_report_and_diff_as_one(corpus: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _tree(corpus, src)
    outputs = {}
    for jobs in ("1", "2"):
        out, report = tmp_path / f"out{jobs}", tmp_path / f"report{jobs}.json"
        convert = _run(
            "convert",
            "--jobs",
            jobs,
            "--report",
            "json",
            "--report-file",
            str(report),
            "--output-dir",
            str(out),
            str(src),
        )
        assert convert.returncode in (0, 2), convert.stderr
        diff = _run("diff", "--jobs", jobs, str(src))
        single = tmp_path / f"single{jobs}.json"
        stdout = _run(
            "convert", "--jobs", jobs, "--report", "json", "--report-file", str(single),
            "--templates-file", str(tmp_path / f"t{jobs}.yaml"), str(src),
        )  # fmt: skip
        outputs[jobs] = (
            convert.returncode,
            _files(out),
            json.loads(report.read_text()),
            diff.returncode,
            diff.stdout,
            stdout.stdout,
            (tmp_path / f"t{jobs}.yaml").read_text(),
            json.loads(single.read_text()),
        )
    assert outputs["1"] == outputs["2"]
    summary = outputs["1"][2]["summary"]
    assert summary["filesChanged"] > 10 and summary["templatesGenerated"] > 0
    # one templates file for the run: each template once, however many files need it
    single_summary = outputs["1"][7]["summary"]
    assert outputs["1"][6].count("kind: ResourceClaimTemplate") == single_summary["templatesGenerated"] > 0


def test_a_large_file_split_among_the_jobs_converts_as_one_piece(corpus: Path, tmp_path: Path) -> None:
    """One stream of many documents (some sharing templates, one a template file's twin), over the
    size at which the runner splits a file into chunks for the workers."""
    files = sorted(p for d in ("legacy", "dra-versions", "negative") for p in (corpus / d).rglob("*.y*ml"))
    rng = random.Random(9)
    texts: list[str] = []
    while sum(map(len, texts)) < runner.LARGE_FILE + runner.CHUNK_BYTES:
        texts.append(rng.choice(files).read_text(encoding="utf-8"))
    big = tmp_path / "big.yaml"
    big.write_text("\n---\n".join(texts), encoding="utf-8")
    outputs = {}
    for jobs in ("1", "2"):
        report = tmp_path / f"report{jobs}.json"
        done = _run("convert", "--jobs", jobs, "--report", "json", "--report-file", str(report), str(big))
        assert done.returncode in (0, 2), done.stderr
        outputs[jobs] = (done.returncode, done.stdout, json.loads(report.read_text()))
    assert outputs["1"] == outputs["2"]
    text, summary = outputs["1"][1], outputs["1"][2]["summary"]
    assert summary["filesChanged"] == 1 and summary["templatesGenerated"] > 0
    assert text.count("kind: ResourceClaimTemplate") >= summary["templatesGenerated"]
