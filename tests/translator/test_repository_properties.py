"""The guard of repository conversion: random repositories (tests/common/repositories.py), converted in
place from the argument forms users and pre-commit pass, judged by the real kustomize: every root of
the repository renders either what it rendered before or exactly its conversion, and a run that exits
0 leaves no root unverified. A fixed budget here; `bench/repository_search.py` runs the longer search."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from repositories import Repository, half_conversions, renders, repositories
from translator_cli_support import Runner
from trees import snapshot

from dra_migrate.translator.renders.render import find_renderer

EXAMPLES = int(os.environ.get("DRA_MIGRATE_REPOSITORY_EXAMPLES", "12"))


@pytest.mark.usefixtures("kustomize")
@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same repositories on every CI run; bench/repository_search.py searches further
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(repo=repositories())
def test_no_root_renders_half_a_conversion(
    run_cli: Runner, tmp_path_factory: pytest.TempPathFactory, repo: Repository
) -> None:
    top = tmp_path_factory.mktemp("repository")
    repo.write(top)
    renderer = find_renderer()
    assert renderer is not None
    before = renders(renderer, top)
    files_before = snapshot(top)
    result = run_cli("convert", "--in-place", "--report", "none", *(str(top / a) for a in repo.arguments))
    assert result.code in (0, 2), result.stderr
    after = renders(renderer, top)
    assert not half_conversions(before, after), (repo.files, repo.arguments, result.stderr)
    event(f"exit {result.code}, {'files changed' if snapshot(top) != files_before else 'nothing written'}")
    if result.code == 2:
        assert "error" in result.stderr
    else:  # every root that renders from what was written was built and verified
        assert result.stderr.count("error") == 0, result.stderr
