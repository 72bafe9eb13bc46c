"""The shared wait for a process's readiness fails at once, with the process's output, when the
process dies first, and names what it waited for when time runs out."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from polling import ProcessExitedError, piped_output, wait_while_running


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_a_process_that_dies_fails_the_wait_at_once_with_its_output() -> None:
    process = _python("import sys; print('bad config: line 3'); sys.exit(3)")
    started = time.monotonic()
    with pytest.raises(ProcessExitedError) as failed:
        wait_while_running(lambda: False, process.poll, what="readiness", log=lambda: piped_output(process), timeout=60)
    assert time.monotonic() - started < 30  # not the 60 s timeout
    assert "exited with 3 while waiting for readiness" in str(failed.value)
    assert "bad config: line 3" in str(failed.value)


def test_a_timeout_names_the_wait_and_does_not_read_a_running_process_pipe() -> None:
    process = _python("import time; print('starting', flush=True); time.sleep(60)")
    try:
        with pytest.raises(AssertionError) as failed:
            wait_while_running(
                lambda: None, process.poll, what="readiness", log=lambda: piped_output(process), timeout=0.3
            )
        assert not isinstance(failed.value, ProcessExitedError)
        assert "timed out after 0.3s waiting for readiness" in str(failed.value)
        assert "(still running)" in str(failed.value)
    finally:
        process.kill()
        process.wait()


def test_the_first_truthy_value_is_returned() -> None:
    process = _python("import time; time.sleep(60)")
    try:
        values = iter([None, 0, "ready"])
        assert wait_while_running(lambda: next(values), process.poll, what="x", log=str, interval=0.01) == "ready"
    finally:
        process.kill()
        process.wait()
