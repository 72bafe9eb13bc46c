"""/metrics in multiprocess mode while a worker starts: its sample file exists, empty, for a moment."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_migrate.webhook import metrics


def test_a_starting_workers_empty_file_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    monkeypatch.setattr(metrics, "_multiprocess_registry", None)
    (tmp_path / "counter_4242.db").touch()  # opened by prometheus_client, not yet extended
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    assert body == b""  # no samples yet, and no error
