"""Docker image references, checked the way the engine and registries parse them
(the grammar of github.com/distribution/reference): `[domain/]path[:tag]`."""
from __future__ import annotations

import re

ALNUM = r"[a-z0-9]+"
SEPARATOR = r"(?:[._]|__|[-]+)"
PATH_COMPONENT = rf"{ALNUM}(?:{SEPARATOR}{ALNUM})*"
DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
DOMAIN = rf"(?:{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
NAME = re.compile(rf"^(?:{DOMAIN}/)?{PATH_COMPONENT}(?:/{PATH_COMPONENT})*$")
TAG = re.compile(r"^[\w][\w.-]{0,127}$")
NAME_MAX = 255


def problem(reference: str) -> str | None:
    """Why `reference` (name:tag) is not a valid image reference, or None when it is."""
    name, colon, tag = reference.rpartition(":")
    if not colon or "/" in tag:
        return "it has no tag (expected name:tag)"
    if not TAG.match(tag):
        return (f"the tag {tag!r} is not valid: up to 128 letters, digits, '_', '.' and '-', "
                "not starting with '.' or '-'")
    if len(name) > NAME_MAX:
        return f"the name is {len(name)} characters long, more than {NAME_MAX}"
    if not NAME.match(name):
        return (f"the name {name!r} is not valid: lowercase path components of letters and "
                "digits, joined by '.', '_', '__' or '-', separated by '/'")
    return None
