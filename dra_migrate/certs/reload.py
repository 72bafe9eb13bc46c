"""Server TLS context that picks up rotated certificate files without a restart.

Kubernetes updates a Secret volume by writing a new timestamped directory and renaming
the `..data` symlink onto it, so `tls.crt` and `tls.key` change together but the
server's already-loaded SSLContext never notices. Instead of reloading in a timer
thread, the SNI callback (which OpenSSL runs on every ClientHello, with or without a
server name) checks the files at most once per interval and points the handshaking
connection at the newest context that loaded successfully. Both files are read from the
directory `..data` led to, and a read that the next update overlaps (the kubelet deletes the old
directory right after the swap) is made again rather than reported. A half-rotated or broken pair
never replaces a working one, so no handshake fails because of a rotation; nor does a
well-formed certificate that is expired or not valid yet while the served one is valid
(a not-yet-valid one is taken once its time comes). Each failed reload is reported once
through `on_error`; `on_loaded` hears of every pair served (for an expiry metric).

TLS 1.2 is the minimum, and its cipher suites are the AEAD ones only (no CBC); TLS 1.3
suites are all AEAD.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

log = logging.getLogger(__name__)

StrPath = str | os.PathLike[str]
# (resolved path, device, inode, size, mtime) of each file; any difference means "look again".
_Fingerprint = tuple[tuple[str, int, int, int, int], ...]


class TLSLoadError(Exception):
    """The certificate/key pair could not be loaded; `fingerprint` is the files' as they were read."""

    def __init__(self, message: str, fingerprint: _Fingerprint | None = None) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint


# A Secret volume's update deletes the directory `..data` pointed at right after the swap: a read
# that overlaps it finds its files gone, or the certificate of one pair and the key of the next.
# Such a read is made again (the files changed while it ran) instead of being reported.
READ_ATTEMPTS = 3


# TLS 1.2 suites: forward secret and AEAD (AES-GCM, ChaCha20-Poly1305), never CBC.
TLS12_CIPHERS = "@SECLEVEL=2:ECDHE+AESGCM:ECDHE+CHACHA20"


@dataclass(frozen=True)
class CertificateInfo:
    """The served certificate (serial, subject of the leaf) and when its whole chain is valid: a
    client refuses the leaf when an intermediate sent with it has expired."""

    serial: int
    not_after: dt.datetime  # the earliest notAfter in the chain
    subject: str
    not_before: dt.datetime  # the latest notBefore in the chain
    expires_first: str = ""  # subject of the chain certificate that sets not_after, when not the leaf
    valid_last: str = ""  # subject of the one that sets not_before, when not the leaf

    def problem(self, now: dt.datetime) -> str | None:
        """Why the certificate is not valid at `now`, or None."""
        if now < self.not_before:
            return f"{self._naming(self.valid_last)} is not valid before {self.not_before.isoformat()}"
        if now >= self.not_after:
            return f"{self._naming(self.expires_first)} expired at {self.not_after.isoformat()}"
        return None

    def _naming(self, chain_subject: str) -> str:
        leaf = f"certificate serial={self.serial:x}"
        return f"{leaf}: the chain certificate {chain_subject}" if chain_subject else leaf


@dataclass(frozen=True)
class TLSStatus:
    """Snapshot for readiness probes and logs."""

    loaded: bool
    last_error: str | None
    certificate: CertificateInfo | None
    loaded_at: dt.datetime | None


@dataclass(frozen=True)
class _Loaded:
    context: ssl.SSLContext
    info: CertificateInfo
    at: dt.datetime


class ReloadingTLSContext:
    """Hand `.context` to the server; rotations of the files are served automatically.

    `configure` is applied to every context built here (the base one and each reload),
    e.g. to set ciphers or client verification; TLS 1.2 stays the minimum regardless.
    With `require_initial=False` a missing or broken pair at start is not fatal:
    handshakes are refused (and `loaded` is False) until a good pair appears.
    """

    def __init__(
        self,
        cert_file: StrPath,
        key_file: StrPath,
        *,
        check_interval: float = 1.0,
        configure: Callable[[ssl.SSLContext], None] | None = None,
        require_initial: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        on_loaded: Callable[[CertificateInfo], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self._cert_file = Path(cert_file)
        self._key_file = Path(key_file)
        self._interval = check_interval
        self._configure = configure
        self._clock = clock
        self._wall_clock = wall_clock
        self._on_loaded = on_loaded
        self._on_error = on_error
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._fingerprint: _Fingerprint | None = None
        self._last_error: str | None = None
        self._last_failure: tuple[_Fingerprint | None, str] | None = None
        self._last_check = clock()
        self._reporting = True

        self._base = self._new_context()
        self._base.sni_callback = self._on_client_hello
        try:
            fingerprint, context, info = self._read_pair(lambda: self._base)
        except TLSLoadError as exc:
            if require_initial:
                raise
            self._record_error(str(exc), exc.fingerprint)
        else:
            self._install(context, info, fingerprint)

    @property
    def context(self) -> ssl.SSLContext:
        """The context to give the server; it switches each connection to the newest pair."""
        return self._base

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    @property
    def last_error(self) -> str | None:
        """Why the latest load attempt failed; None once a load succeeds."""
        return self._last_error

    @property
    def certificate(self) -> CertificateInfo | None:
        loaded = self._loaded
        return loaded.info if loaded else None

    def certificate_problem(self) -> str | None:
        """Why the served certificate is not valid now (expired, not yet valid, none), or None."""
        loaded = self._loaded
        if loaded is None:
            return f"no TLS certificate loaded: {self._last_error}"
        return loaded.info.problem(self._wall_clock())

    def status(self) -> TLSStatus:
        loaded = self._loaded
        return TLSStatus(
            loaded=loaded is not None,
            last_error=self._last_error,
            certificate=loaded.info if loaded else None,
            loaded_at=loaded.at if loaded else None,
        )

    def forked(self) -> None:
        """Called in a process forked from the one that built this context (which goes on checking
        and reporting): carry on from the inherited state, the pair served and the rotations
        already refused, so every process serves the same pair, and report nothing again."""
        self._lock = threading.Lock()  # the forking process's lock may have been held at the fork
        self._reporting = False

    def reload_if_changed(self) -> bool:
        """Check the files now (ignoring the interval); True if a new pair was installed."""
        with self._lock:
            return self._check()

    def current_context(self) -> ssl.SSLContext | None:
        """The newest good context, after checking the files when the interval has passed;
        None while no pair has loaded. For servers that pick the context before the
        handshake instead of through `.context`'s SNI callback."""
        # Never make a handshake wait for another thread's reload: if one is running,
        # serve the current pair and let that thread finish.
        if self._due() and self._lock.acquire(blocking=False):
            try:
                if self._due():
                    self._check()
            finally:
                self._lock.release()
        loaded = self._loaded
        return loaded.context if loaded else None

    def _on_client_hello(
        self, conn: ssl.SSLSocket | ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext
    ) -> int | None:
        try:
            context = self.current_context()
            if context is None:
                return ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
            if conn.context is not context:
                conn.context = context
        except Exception:
            # An exception escaping here would fail the handshake; the current pair is still good.
            log.exception("TLS certificate reload check failed")
        return None

    def _due(self) -> bool:
        return self._clock() - self._last_check >= self._interval

    def _check(self) -> bool:
        self._last_check = self._clock()
        try:
            if self._read_fingerprint() == self._fingerprint:
                return False
        except TLSLoadError:
            pass  # read again, and reported, below
        try:
            seen, context, info = self._read_pair(self._new_context)
        except TLSLoadError as exc:
            # The fingerprint is left as it was, so the next check retries: the rest of a
            # half-finished rotation may arrive any moment.
            self._record_error(str(exc), exc.fingerprint)
            return False
        problem = info.problem(self._wall_clock())
        if problem is not None and self.certificate_problem() is None:
            # Retried every interval like a broken pair: a not-yet-valid one is taken in time.
            self._record_error(f"{self._cert_file}: {problem}; the served certificate is still valid", seen)
            return False
        self._install(context, info, seen)
        return True

    def _read_pair(
        self, new_context: Callable[[], ssl.SSLContext]
    ) -> tuple[_Fingerprint | None, ssl.SSLContext, CertificateInfo]:
        """The files' fingerprint and a context loaded from them, with its certificate's info. Both
        files are read from the directory their symlinks led to when fingerprinted, so the context
        and the info are of one pair. A read the files changed under is made again, up to
        READ_ATTEMPTS; when they never hold still, what was read is returned without a fingerprint,
        so that the next check reads them again."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            seen: _Fingerprint | None = None
            try:
                seen = self._read_fingerprint()
                context = new_context()
                info = self._load_into(context, seen)
            except TLSLoadError as exc:
                if attempt < READ_ATTEMPTS and self._changed_since(seen):
                    continue
                raise TLSLoadError(str(exc), seen) from exc
            if not self._changed_since(seen):
                return seen, context, info
            if attempt == READ_ATTEMPTS:
                return None, context, info
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _changed_since(self, seen: _Fingerprint | None) -> bool:
        """Whether the files are not (or no longer all) the ones fingerprinted as `seen`."""
        try:
            return seen is None or self._read_fingerprint() != seen
        except TLSLoadError:
            return True

    def _install(self, context: ssl.SSLContext, info: CertificateInfo, fingerprint: _Fingerprint | None) -> None:
        self._loaded = _Loaded(context, info, dt.datetime.now(dt.UTC))
        self._fingerprint = fingerprint
        self._last_error = None
        self._last_failure = None
        if not self._reporting:
            return
        log.info(
            "serving TLS certificate %s serial=%x notAfter=%s",
            info.subject,
            info.serial,
            info.not_after.isoformat(),
        )
        problem = info.problem(self._wall_clock())
        if problem is not None:
            log.warning("serving an invalid TLS certificate (no valid one to keep): %s", problem)
        if self._on_loaded is not None:
            self._on_loaded(info)

    def _record_error(self, message: str, fingerprint: _Fingerprint | None = None) -> None:
        # Checks repeat every interval while a pair is broken; report each distinct failure once.
        if self._reporting and (fingerprint, message) != self._last_failure:
            action = "keeping the previous pair" if self._loaded else "not serving TLS yet"
            log.warning("cannot load TLS certificate: %s; %s", message, action)
            if self._on_error is not None:
                self._on_error(message)
        self._last_failure = (fingerprint, message)
        self._last_error = message

    def _new_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.set_ciphers(TLS12_CIPHERS)
        # No session tickets: kube-apiserver's webhook client (client-go) sets no ClientSessionCache, so it
        # never resumes a session, and two tickets per handshake were work on every new connection.
        context.num_tickets = 0
        context.options |= ssl.OP_NO_TICKET
        if self._configure is not None:
            self._configure(context)
        if context.minimum_version < ssl.TLSVersion.TLSv1_2:
            context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def _load_into(self, context: ssl.SSLContext, fingerprint: _Fingerprint) -> CertificateInfo:
        (cert_path, *_), (key_path, *_) = fingerprint
        try:
            info = _certificate_info(Path(cert_path).read_bytes())
            # load_cert_chain also checks that the key belongs to the certificate.
            context.load_cert_chain(cert_path, key_path)
        except (OSError, ValueError) as exc:
            raise TLSLoadError(f"{self._cert_file} / {self._key_file}: {_describe(exc)}", fingerprint) from exc
        return info

    def _read_fingerprint(self) -> _Fingerprint:
        try:
            return tuple(_fingerprint(path) for path in (self._cert_file, self._key_file))
        except OSError as exc:
            raise TLSLoadError(_describe(exc)) from exc


def _fingerprint(path: Path) -> tuple[str, int, int, int, int]:
    # Resolve through the `..data` symlink: the resolved path and inode change on every
    # Secret update even when size and mtime happen to match.
    real = path.resolve(strict=True)
    st = real.stat()
    return (str(real), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _certificate_info(pem: bytes) -> CertificateInfo:
    leaf, *sent = x509.load_pem_x509_certificates(pem)
    path = [leaf, *_issuers(leaf, sent)]
    # Ties go to the leaf: a chain certificate is named only when it alone sets the limit.
    expires_first = min(path, key=lambda cert: cert.not_valid_after_utc)
    valid_last = max(path, key=lambda cert: cert.not_valid_before_utc)
    return CertificateInfo(
        serial=leaf.serial_number,
        not_after=expires_first.not_valid_after_utc,
        subject=leaf.subject.rfc4514_string(),
        not_before=valid_last.not_valid_before_utc,
        expires_first="" if expires_first is leaf else expires_first.subject.rfc4514_string(),
        valid_last="" if valid_last is leaf else valid_last.subject.rfc4514_string(),
    )


def _issuers(leaf: x509.Certificate, sent: list[x509.Certificate]) -> list[x509.Certificate]:
    """The intermediates a client verifies the leaf through: from the leaf up its issuers among the
    certificates sent, the longest-lived where several have the issuer's name (a cross-signed one),
    up to a self-signed certificate, which is not one (clients take their roots from their own
    bundle). Certificates sent but off that path do not matter to clients."""
    path: list[x509.Certificate] = []
    current, left = leaf, list(sent)
    while candidates := [cert for cert in left if cert.subject == current.issuer and cert.issuer != cert.subject]:
        current = max(candidates, key=lambda cert: cert.not_valid_after_utc)
        path.append(current)
        left.remove(current)
    return path


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        if exc.reason == "KEY_VALUES_MISMATCH":
            return "the private key does not match the certificate"
        return f"{exc.library or 'SSL'}: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
