"""Value checks the apiserver makes that the OpenAPI schema cannot: DNS names and CEL syntax.

CEL expressions are parsed with the cel-rust grammar (the `common-expression-language` package),
which follows cel-go's. Kubernetes adds the optional-field syntax (`a.?b`, `m[?"k"]`, from
cel-go's OptionalTypes, enabled in the apiserver's base environment since 1.28-1.29), which that
grammar does not know: such expressions are parsed again with the `?` taken out, so the rest of
the expression is still checked. Type checks need Kubernetes' declarations and are left to the
apiserver; syntax errors, the common mistake in hand-written selectors, are caught here.
"""

from __future__ import annotations

import re

# Compiled by re on first use: only config files and --validate check values.
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_OPTIONAL_SYNTAX = r"(\.|\[)\?"
DNS_SUBDOMAIN_MAX = 253


def dns_subdomain_problem(value: str) -> str | None:
    """Why `value` is not a DNS subdomain (RFC 1123, as Kubernetes checks object names), or None."""
    if len(value) > DNS_SUBDOMAIN_MAX:
        return f"{value!r} is longer than {DNS_SUBDOMAIN_MAX} characters"
    if not re.fullmatch(_DNS_SUBDOMAIN, value):
        return (
            f"{value!r} is not a DNS subdomain: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def _parse(expression: str) -> str | None:
    import cel  # here, not at the top: the binding's package also imports its command line (~0.4 s)

    try:
        cel.compile(expression)
    except (ValueError, RuntimeError) as exc:
        return str(exc)
    return None


def cel_problem(expression: str) -> str | None:
    """The CEL syntax error in `expression` (position and message), or None when it parses."""
    error = _parse(expression)
    if error is not None and re.search(_OPTIONAL_SYNTAX, expression):
        error = _parse(re.sub(_OPTIONAL_SYNTAX, lambda m: m.group(1), expression))
    if error is None:
        return None
    detail = error.split("ERROR: <input>:", 1)[-1].split("\n", 1)[0].strip()
    return f"not valid CEL: {detail}"
