"""What the command line's values mean, checked before anything runs (bad: exit 2 naming the
option). No typer here: these are plain functions from text to imgkit's option values."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..options import Signer, Thresholds, Trust

if TYPE_CHECKING:
    from ..registry.destination import Destination

AGE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([smhd]?)$")
SIZE = re.compile(r"^[1-9][0-9]{0,12}[bkmg]?$")
SHARES = {"gemm": "gemm", "conv": "conv", "amp-speedup": "amp_speedup"}


def seconds_of(option: str, text: str | None) -> float | None:
    """90m, 12h, 7d (or plain seconds) -> seconds."""
    if text is None:
        return None
    match = AGE.match(text.strip())
    if not match:
        raise UsageError(f"{option} {text!r}: expected a duration such as 90m, 12h or 7d")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]


def docker_size(option: str, text: str | None) -> str | None:
    """A size as docker takes it: 512m, 8g, 1073741824."""
    if text is not None and not SIZE.match(text):
        raise UsageError(f"{option} {text!r}: expected a size such as 512m or 8g")
    return text


def compression_of(text: str) -> str:
    """gzip or zstd, the layers' compression of a push."""
    if text not in ("gzip", "zstd"):
        raise UsageError(f"--compression {text!r}: expected gzip or zstd")
    return text


def thresholds_of(pairs: list[str]) -> Thresholds:
    """--min gemm=0.6 --min conv=0.3 --min amp-speedup=1.2 over the defaults."""
    values = dict(vars(Thresholds()))
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or key.strip() not in SHARES:
            raise UsageError(f"--min {pair!r}: expected KEY=NUMBER with KEY one of "
                             f"{', '.join(SHARES)}", hint="e.g. --min gemm=0.6")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--min {pair!r}: {value!r} is not a number") from None
        if number < 0:
            raise UsageError(f"--min {pair!r}: a share or speedup cannot be negative")
        if number > 1 and key.strip() != "amp-speedup":    # TFLOPS or a percentage, meant
            raise UsageError(f"--min {pair!r}: {key.strip()} is a share of the GPU's peak, "
                             f"at most 1 ({value} would ask {value} times the peak)",
                             hint=f"e.g. --min {key.strip()}=0.6 for 60% of the peak")
        values[SHARES[key.strip()]] = number
    return Thresholds(**values)


def platform_of(text: str | None) -> str | None:
    from ..platforms import KNOWN
    if text is not None and text not in KNOWN:
        raise UsageError(f"--platform {text!r}: expected one of {', '.join(KNOWN)}")
    return text


def platforms_of(texts: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for p in map(platform_of, texts) if p))


def key_of(option: str, key: str | None) -> str | None:
    """A cosign key reference that exists: a key file, env://VAR or a KMS URI."""
    if not key:
        return None
    from ..registry.cosign import check_key  # the registry client: only when a key is named
    return check_key(option, key)


def signer_of(key: str | None, keyless: bool, tlog: bool | None) -> Signer:
    if key and keyless:
        raise UsageError("--signing-key and --keyless: sign one way")
    return Signer(key=key_of("--signing-key", key), keyless=keyless, tlog=tlog)


def trust_of(key: str | None, identity: str | None, issuer: str | None,
             tlog: bool | None) -> Trust:
    if bool(identity) != bool(issuer):
        raise UsageError("keyless trust needs both --certificate-identity and "
                         "--certificate-oidc-issuer")
    if key and identity:
        raise UsageError("--trusted-key or a keyless identity: trust one signer")
    return Trust(key=key_of("--trusted-key", key), identity=identity, issuer=issuer, tlog=tlog)


def destination_of(option: str, text: str | None) -> Destination | None:
    """REGISTRY[/NAMESPACE], as publish's --to takes it."""
    from ..registry.destination import parse_destination
    return None if text is None else parse_destination(text, option)


def needing(needed_by: list[str] | None, reuse_from: str | None) -> tuple[str, ...]:
    """--needed-by's images; they are judged against --reuse-from, so it needs one."""
    if needed_by and reuse_from is None:
        raise UsageError("--needed-by asks which later images production holds unchanged",
                         hint="add --reuse-from REGISTRY[/NAMESPACE], where they are promoted")
    return tuple(dict.fromkeys(needed_by or ()))
