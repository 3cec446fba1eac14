"""File and metadata tests, judged from what the image holds without starting it: a path's
existence, mode and owner; a file's contents (through its links, as a command would read
it); the image's config (env, labels, ports, volumes, entrypoint, cmd, workdir, user)."""
from __future__ import annotations

from ...engine import FileEntry, ImageConfig
from ...matrix.checkfile import EnvVar, FileContentTest, FileExistenceTest, MetadataTest
from ...matrix.cst_regex import python_pattern
from ..verdict import FAIL, PASS, Check
from .judged import matching, shown


def _executable_by(mode: str, who: str) -> bool:
    bits = {"owner": [3], "group": [6], "other": [9], "any": [3, 6, 9]}[who]
    return any(mode[i] in "xst" for i in bits)


def existence_check(test: FileExistenceTest, entry: FileEntry | None) -> Check:
    name = f"check: {test.name}"
    if entry is None or not test.should_exist:
        ok = (entry is None) != test.should_exist
        said = "absent" if entry is None else f"present ({entry.mode})"
        return Check(name, PASS if ok else FAIL, "present" if test.should_exist else "absent",
                     said, "" if ok else f"the declared check {test.name!r} failed: "
                     f"{test.path} is {said}")
    problems = []
    if test.permissions is not None and entry.mode != test.permissions:
        problems.append(f"mode {entry.mode}, not {test.permissions}")
    if test.uid is not None and entry.uid != test.uid:
        problems.append(f"uid {entry.uid}, not {test.uid}")
    if test.gid is not None and entry.gid != test.gid:
        problems.append(f"gid {entry.gid}, not {test.gid}")
    if test.is_executable_by is not None and not _executable_by(entry.mode, test.is_executable_by):
        problems.append(f"not executable by {test.is_executable_by} ({entry.mode})")
    measured = f"{entry.mode} {entry.uid}:{entry.gid}"
    return Check(name, FAIL if problems else PASS, f"{test.path} present", measured,
                 f"the declared check {test.name!r} failed: {test.path}: {'; '.join(problems)}"
                 if problems else "")


def content_check(test: FileContentTest, entry: FileEntry | None) -> Check:
    name = f"check: {test.name}"
    if entry is None or entry.content is None:
        return Check(name, FAIL, f"{test.path}, a file", "absent" if entry is None else entry.mode,
                     f"the declared check {test.name!r} failed: {test.path} is not a file")
    text = entry.content.decode(errors="replace")
    problems = [f"no /{p}/" for p in matching(test.expected_contents, text, True)]
    problems += [f"/{p}/ found" for p in matching(test.excluded_contents, text, False)]
    return Check(name, FAIL if problems else PASS, "".join(f"/{p}/ " for p in test.expected_contents)
                 .strip() or "its contents", shown(text) or "(empty)",
                 f"the declared check {test.name!r} failed: {test.path}: {'; '.join(problems)}"
                 if problems else "")


def _pairs(wanted: list[EnvVar], have: dict[str, str], what: str) -> list[str]:
    out = []
    for var in wanted:
        value = have.get(var.key)
        ok = value is not None and (bool(python_pattern(var.value).fullmatch(value)) if var.is_regex
                                    else value == var.value)
        if not ok:
            out.append(f"{what} {var.key}={value!r}, not {var.value!r}" if value is not None
                       else f"no {what} {var.key}")
    return out


def metadata_checks(test: MetadataTest, config: ImageConfig) -> list[Check]:
    """The metadata test against the image's config, one check naming every difference."""
    ports = {p.split("/")[0] for p in config.exposed_ports}
    volumes = set(config.volumes)
    problems = _pairs(test.env_vars, dict(config.env), "env") + _pairs(test.labels,
                                                                        dict(config.labels), "label")
    problems += [f"port {p} not exposed" for p in test.exposed_ports if p not in ports]
    problems += [f"port {p} exposed" for p in test.unexposed_ports if p in ports]
    problems += [f"no volume {v}" for v in test.volumes if v not in volumes]
    problems += [f"volume {v}" for v in test.unmounted_volumes if v in volumes]
    for key, want, have in (("entrypoint", test.entrypoint, list(config.entrypoint)),
                            ("cmd", test.cmd, list(config.cmd)), ("workdir", test.workdir, config.workdir),
                            ("user", test.user, config.user)):
        if want is not None and want != have:
            problems.append(f"{key} {have!r}, not {want!r}")
    return [Check("check: metadata", FAIL if problems else PASS, "as declared",
                  "; ".join(problems) or "as declared",
                  f"the declared metadata test failed: {'; '.join(problems)}" if problems else "")]
