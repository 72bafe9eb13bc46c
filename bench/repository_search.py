"""The longer search of the repository-conversion property (tests/translator/test_repository_properties.py):
random kustomize repositories converted in place from random argument forms, judged by the real
kustomize. Prints how many runs converted, were refused, and any root left half converted (with the
repository, to reproduce it). Exits 1 when one was found.

    python bench/repository_search.py [--examples 200] [--seed N]

kustomize: $DRA_MIGRATE_KUSTOMIZE, else kustomize or kubectl on PATH (as `dra-migrate` finds it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "common"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from repositories import Repository, half_conversions, renders, repositories  # noqa: E402
from trees import snapshot  # noqa: E402

from dra_migrate.cli import main as dra_migrate  # noqa: E402
from dra_migrate.translator.renders.render import find_renderer  # noqa: E402


def _run(arguments: list[str]) -> int:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return dra_migrate(arguments)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    renderer = find_renderer()
    if renderer is None:
        print("no kustomize or kubectl: nothing to judge with", file=sys.stderr)
        return 2
    outcomes: Counter[str] = Counter()
    found: list[str] = []

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(repo=repositories())
    def search(repo: Repository) -> None:
        with tempfile.TemporaryDirectory(prefix="dra-migrate-repository-") as scratch:
            top = Path(scratch)
            repo.write(top)
            before, files = renders(renderer, top), snapshot(top)
            code = _run(["convert", "--in-place", "--report", "none", *(str(top / a) for a in repo.arguments)])
            outcomes[f"exit {code}, {'written' if snapshot(top) != files else 'nothing written'}"] += 1
            problems = half_conversions(before, renders(renderer, top))
            if problems or code not in (0, 2):
                found.append(f"exit {code}: {problems}\n  files: {repo.files}\n  arguments: {repo.arguments}")

    started = time.monotonic()
    search()
    print(f"seed {args.seed}: {args.examples} repositories in {time.monotonic() - started:.0f} s with {renderer.label}")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome}: {count}")
    print(f"half conversions found: {len(found)}")
    for problem in found[:5]:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
