"""TOML for every Python imgkit runs on: the standard library's tomllib from 3.11, the
tomli it was taken from on 3.10 (a dependency there, pyproject.toml). Imported only where
a TOML file is read."""
from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover - Python 3.10
    from tomli import TOMLDecodeError, loads  # type: ignore[import-not-found, unused-ignore]

__all__ = ["TOMLDecodeError", "loads"]
