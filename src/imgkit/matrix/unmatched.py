"""What a --cuda that no image has meant (`11.8.0`, `cu118`, two at once), and what an
--only glob that matches nothing meant, in a hint: the images it matches in
other CUDA releases, the glob of a repository named alone (`--only paddle`), a space at
its end, a misspelt repository, a tag without its `*`, or the tags the repository has."""
from __future__ import annotations

import re
from typing import Collection, Sequence

from .compat import version_key
from .fields import meant
from .targets import Target, matches

GENERIC = "--only takes tags or globs of tags, as `imgkit list` prints them (e.g. 'ml/pytorch:*')"


def cuda_hint(cuda: str, known: Sequence[str]) -> str:
    """The release meant by a --cuda no image has, as the matrix writes it, else the list."""
    listed = f"CUDA versions in the matrix: {', '.join(known)}"
    several = [v for v in re.split(r"[\s,;]+", cuda) if v]
    if len(several) > 1:
        return (f"one CUDA release per run: --cuda {several[0]}, then --cuda {several[1]} "
                f"(or every image: leave --cuda out); {listed}")
    digits = re.sub(r"^(?:cuda|cu)[-_]?", "", cuda.strip().lower())
    if re.fullmatch(r"\d{3,4}", digits):                   # cu118, cu128: PyTorch's index names
        digits = f"{digits[:-1]}.{digits[-1]}"
    release = ".".join(digits.split(".")[:2])             # 11.8.0: the matrix says 11.8
    if release != cuda and release in known:
        return f"the matrix names CUDA releases by major.minor: --cuda {release}"
    return listed


def unmatched_hint(targets: Sequence[Target], finals: Collection[str], glob: str,
                   cuda: str | None) -> str:
    elsewhere = sorted({t.cuda for t in targets if t.cuda and matches(t, glob)},
                       key=version_key)
    if cuda and elsewhere:
        return f"it matches images of CUDA {', '.join(elsewhere)}; drop --cuda or name one of those"
    if glob != glob.strip():
        return f"it has a space at an end: --only '{glob.strip()}'"
    repositories = sorted({t.tag.split(":", 1)[0] for t in targets})
    named = [r for r in repositories if glob in (r, r.rsplit("/", 1)[-1])] + sorted(
        {t.tag.split(":", 1)[0] for t in targets if glob == t.family and t.tag in finals})
    if named:
        return ("--only takes tags or globs of tags: "
                + " or ".join(f"--only '{repository}:*'" for repository in dict.fromkeys(named)))
    return _near(targets, glob, repositories) or GENERIC


def _near(targets: Sequence[Target], glob: str, repositories: list[str]) -> str:
    """The glob with its repository spelt as the matrix spells it, its tag completed by a
    `*`, or the tags of its repository."""
    repository, colon, tag = glob.partition(":")
    if colon and repository not in repositories:
        short = {r.rsplit("/", 1)[-1]: r for r in repositories}
        fixed = short.get(repository) or meant(repository, repositories) or \
            short.get(meant(repository, list(short)), "")
        if fixed and any(matches(t, f"{fixed}:{tag}") for t in targets):
            return f"did you mean --only '{fixed}:{tag}'?"
    if colon and any(t.tag.startswith(glob) for t in targets):
        return f"did you mean --only '{glob}*'?"
    if colon and repository in repositories:
        tags = sorted(t.tag.split(":", 1)[1] for t in targets
                      if t.tag.split(":", 1)[0] == repository)
        return f"{repository} has: {', '.join(tags[:8])}" + (" ..." if len(tags) > 8 else "")
    return ""
