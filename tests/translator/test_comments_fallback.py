"""A document the comment-keeping editor cannot edit in place: every lost comment line is reported."""

from __future__ import annotations

import json
from pathlib import Path

from translator_cli_support import Runner

ANCHORED = """\
# top comment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer   # the name
  namespace: ml
spec:
  template:
    spec:
      # containers follow
      containers:
      - &main
        name: main  # main container
        image: vllm
        resources:
          limits:
            nvidia.com/gpu: 1
      - <<: *main
        name: second
"""


def test_no_comment_is_lost_silently(run_cli: Runner, tmp_path: Path) -> None:
    path = tmp_path / "anchored.yaml"
    path.write_text(ANCHORED)
    result = run_cli("convert", "--report", "json", str(path))
    assert result.code == 0, result.stderr
    rows = [row for row in json.loads(result.stderr)["findings"] if row["rule"] == "comment-lost"]
    assert rows, "the merge key forces a full rewrite here, which loses comments"
    assert all(row["severity"] == "warning" for row in rows)
    reported = {int(row["message"].split()[3]) for row in rows}
    for number, line in enumerate(ANCHORED.splitlines(), start=1):
        if "#" in line:
            comment = line[line.index("#") :]
            assert comment in result.stdout or number in reported, f"line {number} lost silently: {comment}"
