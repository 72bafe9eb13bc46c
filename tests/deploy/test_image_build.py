"""The Dockerfile's build, replayed without a Docker daemon.

No container engine runs here, and the base image (python:3.11-slim) lives in a registry this
machine cannot reach, so a daemonless builder (buildah and podman install from Debian) cannot run
the FROM line either. The replay runs what the image is made of instead, on this machine's Python
of the same minor version, under a scratch directory that stands for the image's `/`:

- the build context is copied by the rules of .dockerignore;
- the builder stage's WORKDIR and RUN lines run as written (`/bin/sh -c`), with the image's
  absolute paths moved under the scratch root (the pip cache mount is the only flag dropped);
- the runtime stage copies the builder's venv, sets its ENV, and runs its ENTRYPOINT + CMD as the
  USER it names (when the tests run as root): `serve --help`, then the full CMD with the files the
  Deployment mounts, until GET /readyz answers 200 over TLS;
- the venv holds only dra-migrate and its run-time dependency closure: no pip, no setuptools, no
  test or lint tools.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from deploy_support import REPO_ROOT, write_throwaway_certs
from dockerfile_model import Stage, env_of, exec_form, parse_dockerfile
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from polling import piped_output, wait_while_running

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
DEPLOY_CONFIG = REPO_ROOT / "deploy" / "base" / "config.yaml"
# Absolute paths of the image that the replay moves under its scratch root.
IMAGE_PATH = re.compile(r"(?<![\w./-])/(src|opt|tmp|etc)(?=/|\b)")
BUILD_TIMEOUT_S = 900
KUBECONFIG_TEXT = """\
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: unused}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


# --------------------------------------------------------------------------- .dockerignore


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus `**`) as a regex over relative paths."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """(is_exception, regex) in file order; the last matching rule wins, as in Docker."""
    rules = []
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        cleaned = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((exception, _pattern_regex(cleaned)))
    return rules


def ignored(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """A path is ignored when it, or a directory above it, matches (the last matching rule decides)."""
    parts = relative.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for exception, regex in rules:
        if any(regex.fullmatch(candidate) for candidate in candidates):
            result = not exception
    return result


def copy_context(destination: Path) -> list[str]:
    """`COPY . .` of the build context; returns the relative paths copied."""
    rules = dockerignore_rules()
    copied = []
    for source in sorted(REPO_ROOT.rglob("*")):
        relative = source.relative_to(REPO_ROOT).as_posix()
        if source.is_dir() or ignored(relative, rules):
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        copied.append(relative)
    return copied


# --------------------------------------------------------------------------- the replay


@dataclass
class Image:
    root: Path  # stands for the image's /
    context: list[str]
    runtime: Stage
    build_log: str
    run_as: dict[str, Any]  # subprocess kwargs for the runtime stage's USER ({} when not possible)

    def local(self, image_path: str) -> str:
        return IMAGE_PATH.sub(lambda m: f"{self.root}/{m.group(1)}", image_path)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        for key, value in env_of(self.runtime).items():
            env[key] = self.local(value).replace("${PATH}", os.environ.get("PATH", ""))
        return env

    def command(self) -> list[str]:
        """ENTRYPOINT + CMD, with the image's paths moved under the scratch root."""
        entrypoint = exec_form(self.runtime.last("ENTRYPOINT"))
        return [*entrypoint, *exec_form(self.runtime.last("CMD"))]

    def site_packages(self) -> Path:
        [found] = (self.root / "opt" / "venv" / "lib").glob("python3.*/site-packages")
        return found


def _run_instruction(args: str, cwd: Path, root: Path, shim: Path) -> subprocess.CompletedProcess[str]:
    script = re.sub(r"^(?:--\S+\s+)+", "", args)  # --mount=type=cache,...: a cache, not a step
    script = IMAGE_PATH.sub(lambda m: f"{root}/{m.group(1)}", script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{shim}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return subprocess.run(
        ["/bin/sh", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
    )


def _base_python_version() -> tuple[int, int]:
    global_args, stages = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
    base = re.sub(r"\$\{?(\w+)\}?", lambda m: global_args.get(m.group(1), m.group(0)), stages[0].base)
    match = re.match(r"python:(\d+)\.(\d+)", base)
    assert match, f"unexpected base image {base}"
    return int(match.group(1)), int(match.group(2))


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    if sys.version_info[:2] != _base_python_version():
        pytest.skip(f"the image runs Python {_base_python_version()}; this is {sys.version_info[:2]}")
    # World-readable, so the runtime stage's USER can read the venv (pytest's tmp dirs are 0700).
    root = Path(tempfile.mkdtemp(prefix="dra-migrate-image-"))
    root.chmod(0o755)
    try:
        _, stages = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
        builder, runtime = stages[0], stages[-1]
        shim = root / "shim"
        shim.mkdir()
        # The base image's `python`: this machine's interpreter of the same minor version.
        python = _image_python()
        (shim / "python").symlink_to(python)
        log = []
        cwd = root
        context: list[str] = []
        for keyword, args in builder.instructions:
            if keyword == "WORKDIR":
                cwd = Path(IMAGE_PATH.sub(lambda m: f"{root}/{m.group(1)}", args))
                cwd.mkdir(parents=True, exist_ok=True)
            elif keyword == "COPY":
                assert args.split() == [".", "."], f"the replay knows `COPY . .` only, not {args}"
                context = copy_context(cwd)
            elif keyword == "RUN":
                result = _run_instruction(args, cwd, root, shim)
                log.append(f"RUN {args}\n{result.stdout}{result.stderr}")
                assert result.returncode == 0, f"builder stage failed:\n{log[-1]}"
        for copy in runtime.all("COPY"):
            source, target = copy.split()[1:]
            assert copy.startswith("--from=") and source == target, f"the runtime copies build outputs in place: {copy}"
        run_as = _as_user(runtime) if _others_can_run(python) else {}
        yield Image(root=root, context=context, runtime=runtime, build_log="\n".join(log), run_as=run_as)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _others_can_run(path: Path) -> bool:
    """Whether a user other than the owner can run `path` (x for others on it and every parent)."""
    real = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in (real, *real.parents))


def _image_python() -> Path:
    """An interpreter of the running minor version that the image's USER can run, if there is one
    (a pyenv build under /root is not), else the one running the tests."""
    base = Path(getattr(sys, "_base_executable", sys.executable))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [base, *(Path(d) / version for d in ("/usr/local/bin", "/usr/bin"))]
    for candidate in candidates:
        if candidate.is_file() and _others_can_run(candidate):
            probe = subprocess.run(
                [str(candidate), "-c", "import ensurepip, venv"], capture_output=True, check=False, timeout=30
            )
            if probe.returncode == 0:
                return candidate
    return base


def _as_user(runtime: Stage) -> dict[str, Any]:
    """subprocess kwargs that run as the stage's numeric USER (only possible as root)."""
    uid, _, gid = runtime.last("USER").partition(":")
    if os.geteuid() != 0:
        return {}
    return {"user": int(uid), "group": int(gid or uid), "extra_groups": []}


# --------------------------------------------------------------------------- checks


def test_build_context_follows_dockerignore(image: Image) -> None:
    assert {"pyproject.toml", "README.md", "LICENSE", "dra_migrate/__init__.py"} <= set(image.context)
    for path in image.context:
        top = path.split("/")[0]
        assert top not in {".git", ".venv", "tests", "deploy", "bench", ".ci"}, path
        assert not path.endswith((".key", ".pem", ".pyc")), path


def test_the_image_holds_only_what_serve_needs(image: Image) -> None:
    venv = image.root / "opt" / "venv"
    assert not (venv / "bin" / "pip").exists(), "pip is uninstalled from the image's venv"
    installed = {
        canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions(path=[str(image.site_packages())])
    }
    assert "setuptools" not in installed and "pip" not in installed

    # dra-migrate and the closure of its run-time requirements, nothing else.
    needed: set[str] = set()
    pending = ["dra-migrate"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in needed:
            continue
        needed.add(name)
        assert name in installed, f"{name} is required but not installed"
        for text in installed[name].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    assert set(installed) == needed, f"not needed by dra-migrate: {sorted(set(installed) - needed)}"
    for tool in ("pytest", "hypothesis", "mypy", "ruff", "pre-commit"):
        assert canonicalize_name(tool) not in installed


def test_entrypoint_and_cmd_run_serve(image: Image) -> None:
    command = image.command()
    assert command[:2] == ["dra-migrate", "serve"]
    result = subprocess.run(
        [*command[:2], "--help"],
        env=image.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **image.run_as,
    )
    assert result.returncode == 0, result.stderr
    assert "--cert" in result.stdout and "--key" in result.stdout
    resolved = shutil.which("dra-migrate", path=image.env()["PATH"])
    assert resolved == str(image.root / "opt" / "venv" / "bin" / "dra-migrate"), "ENV PATH finds the venv's script"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_full_cmd_serves_tls_as_the_image_user(image: Image) -> None:
    """The CMD as written, with the files the Deployment mounts at /etc/dra-migrate, as USER."""
    etc = image.root / "etc" / "dra-migrate"
    certs = write_throwaway_certs(etc / "tls", service="dra-migrate", namespace="dra-migrate")
    shutil.copy(DEPLOY_CONFIG, etc / "config.yaml")
    scratch = image.root / "tmp"  # the pod's writable /tmp (emptyDir)
    scratch.mkdir(exist_ok=True)
    user = image.run_as
    # In a pod the API comes from the in-cluster config; here a kubeconfig that is never dialled
    # (readiness needs the certificate and the configuration, not the API).
    kubeconfig = etc / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG_TEXT, encoding="utf-8")
    for path in [etc, etc / "tls", *etc.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    if user:
        os.chown(scratch, user["user"], user["group"])

    port = _free_port()
    command = [image.local(word) for word in image.command()]
    command[command.index("--port") + 1] = str(port)  # 8443 may be taken on a shared machine
    command += ["--host", "127.0.0.1"]
    env = {**image.env(), "TMPDIR": str(scratch), "HOME": str(scratch), "KUBECONFIG": str(kubeconfig)}
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        **user,
    )
    ca = etc / "tls" / "ca.crt"
    assert ca.read_bytes() == certs.ca_pem
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # the certificate names the Service; the CA is what matters here
    try:

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as answer:
                    return bool(answer.status == 200)
            except OSError:
                return False

        wait_while_running(
            ready, process.poll, what="GET /readyz to answer 200", log=lambda: piped_output(process), interval=0.2
        )
        if user:
            owners = subprocess.run(
                ["ps", "-o", "uid=", "--ppid", str(process.pid), "-p", str(process.pid)],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            assert owners and set(owners) == {str(user["user"])}, f"processes run as {owners}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def test_replay_runs_as_the_image_user(image: Image) -> None:
    """As root, the commands above ran as the Dockerfile's USER; otherwise say why not."""
    if os.geteuid() != 0:
        pytest.skip("not root: cannot switch to the image's USER, so the commands ran as this user")
    if not image.run_as:
        pytest.skip("no Python of the image's minor version that a non-root user can run (e.g. pyenv under /root)")
    uid, _, _ = image.runtime.last("USER").partition(":")
    assert image.run_as["user"] == int(uid) != 0
