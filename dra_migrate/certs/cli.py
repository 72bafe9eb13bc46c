"""`dra-migrate certs generate`: write the webhook's TLS files and print the caBundle.

Only light stdlib modules are imported at module level: every `dra-migrate` invocation builds this
parser, and cryptography is needed only when the command actually runs.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dra_migrate.exits import fail

if TYPE_CHECKING:
    from dra_migrate.subcommands import Subcommands

_KEY_TYPES = ("ecdsa-p256", "rsa-2048", "rsa-3072")
_COMMAND = "certs generate"
_MAX_DAYS = 36500


def register(subcommands: Subcommands) -> None:
    subcommands.add_command(
        "certs",
        _certs_arguments,
        help="create TLS certificates for the webhook",
        description="Create TLS certificates for the admission webhook.",
    )


def _certs_arguments(certs: argparse.ArgumentParser) -> None:
    certs_sub = certs.add_subparsers(dest="certs_command", required=True, metavar="ACTION")
    gen = certs_sub.add_parser(
        "generate",
        help="write a CA and a serving certificate; print the caBundle",
        description=(
            "Write ca.crt, ca.key, tls.crt and tls.key for the webhook Service and print the "
            "base64 caBundle for the MutatingWebhookConfiguration on stdout. With --ca-cert "
            "and --ca-key the serving certificate is signed by that CA, so the caBundle stays "
            "the same across rotations (ca.key is then not copied to --out)."
        ),
    )
    gen.add_argument("--service", required=True, help="webhook Service name")
    gen.add_argument("--namespace", required=True, help="namespace of the Service")
    gen.add_argument("--out", type=Path, default=Path("certs-out"), help="output directory (default: ./certs-out)")
    gen.add_argument(
        "--ip",
        dest="ips",
        action="append",
        default=[],
        type=_ip_address,
        metavar="IP",
        help="extra IP address SAN, e.g. 127.0.0.1 for local runs (repeatable)",
    )
    gen.add_argument(
        "--dns",
        action="append",
        default=[],
        metavar="NAME",
        help="extra DNS name SAN, e.g. localhost (repeatable)",
    )
    gen.add_argument("--key-type", choices=_KEY_TYPES, default="ecdsa-p256", help="default: ecdsa-p256")
    gen.add_argument("--days", type=_positive_int, default=365, help="serving certificate validity (default: 365)")
    gen.add_argument("--ca-cert", type=Path, metavar="FILE", help="existing CA certificate (PEM)")
    gen.add_argument("--ca-key", type=Path, metavar="FILE", help="existing CA private key (PEM)")
    gen.set_defaults(handler=generate_command)


def generate_command(args: argparse.Namespace) -> int:
    import datetime as dt

    from dra_migrate.certs import generate

    if (args.ca_cert is None) != (args.ca_key is None):
        return fail(_COMMAND, "--ca-cert and --ca-key must be given together")
    try:
        ca = None
        if args.ca_cert is not None:
            ca = generate.load_ca(_read(args.ca_cert, "CA certificate"), _read(args.ca_key, "CA key"))
        bundle = generate.create_bundle(
            service=args.service,
            namespace=args.namespace,
            extra_dns=args.dns,
            ip_addresses=args.ips,
            key_type=generate.KeyType(args.key_type),
            leaf_validity=dt.timedelta(days=args.days),
            ca=ca,
        )
        written = generate.write_bundle(bundle, args.out, include_ca_key=ca is None)
    except generate.CertificateError as exc:
        return fail(_COMMAND, str(exc))
    except OSError as exc:
        if Path(args.out).exists() and not Path(args.out).is_dir():
            return fail(_COMMAND, f"--out {args.out}: a file; name a directory for the certificate files")
        return fail(_COMMAND, f"cannot write to {args.out}: {exc.strerror or exc}")

    print(bundle.ca_bundle)
    names = ", ".join(p.name for p in written)
    expires = bundle.leaf.cert.not_valid_after_utc.strftime("%Y-%m-%d")
    print(f"wrote {names} to {args.out} (serving cert expires {expires}); caBundle on stdout", file=sys.stderr)
    return 0


def _read(path: Path, what: str) -> bytes:
    from dra_migrate.certs.generate import CertificateError

    try:
        return path.read_bytes()
    except OSError as exc:
        raise CertificateError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _ip_address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an IP address") from None


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    # The upper bound keeps date arithmetic far from year 9999; the leaf is capped at
    # the CA's expiry anyway.
    if not 0 < number <= _MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days between 1 and {_MAX_DAYS}")
    return number
