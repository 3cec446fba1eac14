"""`imgkit scan` with the real scanner (osv-scanner, built from its Go module by
.ci/build-scanner.sh), offline, against real advisory records (tests/data/advisories), on
real images: the python layer imgkit builds (its venv's pip and setuptools are current, so
it passes its own gate), and images on it whose Python packages and Debian package database
sit on each side of every range of those records. The findings are the scanner's own; imgkit
maps them, holds them to the threshold and the waivers, and says what fails."""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imgkit.matrix import compat

from .helpers.registry import USER, docker_config, skopeo_json, skopeo_tags
from .helpers.scanner import (
    MISSES,
    OLD_LIBC,
    SITE,
    ScanImages,
    advisory_database,
    image_with,
    osv_scanner,
    outside_the_tests_project,
)

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def scanned(scan_images: ScanImages, tmp_path_factory):
    return (osv_scanner(), advisory_database(tmp_path_factory.mktemp("advisories")),
            scan_images.hits, scan_images.misses)


def scan(scanned, tmp_path: Path, image: str, *args: str, cwd: Path | None = None,
         ) -> tuple[int, dict, str]:
    scanner, db, _, _ = scanned
    out = tmp_path / f"scan-{len(list(tmp_path.glob('scan-*')))}.json"
    env = outside_the_tests_project()
    done = subprocess.run([sys.executable, "-m", "imgkit", "scan", image, "--db", str(db),
                           "--json", str(out), *args], capture_output=True, text=True, timeout=900,
                          cwd=cwd or tmp_path, env={**env, "IMGKIT_OSV_SCANNER": str(scanner)})
    assert "Traceback" not in done.stderr, done.stderr
    document = json.loads(out.read_text()) if out.is_file() else {}
    return done.returncode, document, done.stdout + done.stderr


def found(document: dict) -> set[tuple[str, str, str]]:
    return {(f["id"], f["package"], f["installed"]) for f in document["findings"]}


def test_each_side_of_every_range_and_debian_by_source_name(scanned, tmp_path, namespace) -> None:
    _, _, hits, misses = scanned
    code, document, said = scan(scanned, tmp_path, hits, "--fail-on", "critical")
    got = found(document)
    for expected in [("PYSEC-2022-43012", "setuptools", "65.5.0"),
                     ("GHSA-cx63-2mw6-8hw5", "setuptools", "65.5.0"),
                     ("GHSA-5rjg-fvgr-3xxf", "setuptools", "65.5.0"),
                     ("PYSEC-2023-212", "urllib3", "1.26.17"), ("PYSEC-2023-212", "urllib3", "2.0.6"),
                     ("PYSEC-2023-74", "requests", "2.30.0"), ("PYSEC-2022-42969", "py", "1.11.0"),
                     ("PYSEC-2023-228", "pip", "23.0.1"), ("GHSA-4xh5-x5gv-qwph", "pip", "23.0.1"),
                     ("DSA-5514-1", "glibc", OLD_LIBC)]:       # libc6 matched by its source, glibc
        assert expected in got, (expected, got, said)
    glibc = next(f for f in document["findings"] if f["package"] == "glibc")
    assert glibc["ecosystem"].startswith("Debian") and glibc["fixed"] == ["2.36-9+deb12u3"]
    urllib3 = {f["installed"]: f for f in document["findings"] if f["package"] == "urllib3"}
    assert set(urllib3["2.0.6"]["fixed"]) == {"2.0.7", "1.26.18"}
    origin = {(f["package"], f["installed"]): (f["origin"], f["step"]) for f in document["findings"]}
    # the image of the chain below brought pip (its labels name it); the image built on it
    # by hand (carrying those labels, not being that image) brought py
    assert origin[("pip", "23.0.1")][0] == f"{namespace}/scan:old-pip", origin
    assert origin[("py", "1.11.0")][0] == hits and "COPY" in origin[("py", "1.11.0")][1], origin
    assert "sed -i" in origin[("glibc", OLD_LIBC)][1], origin
    assert document["scanner"].startswith("osv-scanner 2.6")
    _, clean, said = scan(scanned, tmp_path, misses, "--fail-on", "critical")
    for _, name, version, record in MISSES:
        assert (record, name, version) not in found(clean), (record, name, version, said)
    assert not [f for f in clean["findings"] if f["package"] == "glibc"], said


def test_the_threshold_decides_on_the_scanners_scores(scanned, tmp_path) -> None:
    """setuptools 65.5.0's GHSA-cx63-2mw6-8hw5 is CVSS 3.1 8.8: high, so the default gate
    fails on it and `critical` lets it by; CVSS 4.0 vectors are scored too."""
    _, _, hits, _ = scanned
    code, document, said = scan(scanned, tmp_path, hits)
    levels = {(f["id"], f["installed"]): (f["level"], f["verdict"]) for f in document["findings"]}
    assert levels[("GHSA-cx63-2mw6-8hw5", "65.5.0")] == ("high", "fail"), levels
    assert levels[("GHSA-4xh5-x5gv-qwph", "23.0.1")] == ("medium", "below"), levels   # CVSS 4.0
    pip = next(f for f in document["findings"] if f["id"] == "PYSEC-2023-228")
    assert pip["level"] == "low" and "CVE-2023-5752" in pip["aliases"] and pip["fixed"] == ["23.3"]
    assert code == 1 and "FAILED" in said and document["failed"] is True
    failing = {f["package"] for f in document["findings"]
               if f["verdict"] == "fail" and f["ecosystem"] == "PyPI" and f["fixed"]}
    assert f"next: raise the pin of {', '.join(sorted(failing))} to a fixed version" in said, said
    code, document, said = scan(scanned, tmp_path, hits, "--fail-on", "critical")
    assert code == 0 and "PASSED" in said, said


def test_imgkits_own_python_layer_passes_its_own_gate(scanned, engine, tmp_path,
                                                      mini_stack) -> None:
    """The venv holds PyPI's pip and setuptools from the compat data, and the distro's old
    copies are gone, so not one record matches, at the lowest threshold; the distro's
    (pip 23.0.1, setuptools 66.1.1) fail the default gate on GHSA-cx63-2mw6-8hw5."""
    code, document, said = scan(scanned, tmp_path, mini_stack.python, "--fail-on", "low")
    assert code == 0 and document["findings"] == [], said
    held = engine.client.containers.run(
        mini_stack.python, ["sh", "-c", "pip --version; python -c 'import setuptools as s; "
                            "print(s.__version__)'; ls /usr/share/python-wheels || true"],
        remove=True, stderr=True).decode()
    pins = {name: version for name, version, _ in compat.load().venv_tools("3.11")}
    assert f"pip {pins['pip']} from /opt/venv" in held and f"\n{pins['setuptools']}\n" in held, held
    assert "No such file or directory" in held, held           # no distro wheels left behind


def test_waivers_by_alias_expired_fixable_and_unused(scanned, tmp_path) -> None:
    """py 1.11.0 has no fix (PYSEC-2022-42969): a waiver naming its CVE covers it until it
    expires; a waiver of what a version fixes (requests) fails; one that covers nothing
    (a package the image does not hold) is a warning."""
    _, _, hits, _ = scanned
    project = tmp_path / "project"
    (project / "images").mkdir(parents=True)
    (project / "imgkit.toml").write_text('images = "images"\n')
    later = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    waivers = project / "images" / "vulnerabilities.yaml"

    def waive(expires: str, extra: str = "") -> str:
        waivers.write_text(
            "waivers:\n"
            f"  - {{id: CVE-2022-42969, package: py, ecosystem: PyPI, expires: {expires},\n"
            "     reason: the svn support of py is never used here, who: ml-platform}\n" + extra)
        return expires
    waive(later)
    code, document, said = scan(scanned, tmp_path, hits, "--fail-on", "medium", cwd=project)
    py = next(f for f in document["findings"] if f["package"] == "py")
    assert py["verdict"] == "waived" and "never used" in py["why"], py
    waive((dt.date.today() - dt.timedelta(days=1)).isoformat())
    code, document, said = scan(scanned, tmp_path, hits, "--fail-on", "critical", cwd=project)
    py = next(f for f in document["findings"] if f["package"] == "py")
    assert code == 1 and py["verdict"] == "fail" and "expired" in py["why"], py
    waive(later, f"  - {{id: PYSEC-2023-74, package: requests, ecosystem: PyPI, expires: {later},\n"
                 "     reason: proxies are not used by this image, who: ml-platform}\n"
                 f"  - {{id: CVE-2000-0001, package: nothing, ecosystem: PyPI, expires: {later},\n"
                 "     reason: left over from an old image, who: ml-platform}\n")
    code, document, said = scan(scanned, tmp_path, hits, "--fail-on", "critical", cwd=project)
    requests = next(f for f in document["findings"] if f["package"] == "requests")
    assert code == 1 and requests["verdict"] == "fail" and "2.31.0 fixes it now" in requests["why"]
    assert "CVE-2000-0001" in said and "covers no finding" in said
    assert [w["id"] for w in document["unused_waivers"]] == ["CVE-2000-0001"]


def test_what_the_host_lacks_is_exit_3_never_a_pass(scanned, tmp_path, mini_stack) -> None:
    scanner, db, _, _ = scanned
    empty = tmp_path / "empty-db"
    empty.mkdir()
    env = outside_the_tests_project()

    def run(*args: str, scanner_path: str = str(scanner)) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "imgkit", "scan", mini_stack.python, *args],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path,
                              env={**env, "IMGKIT_OSV_SCANNER": scanner_path})
    no_db = run("--db", str(empty))
    assert no_db.returncode == 3 and "no advisory database" in no_db.stderr and "all.zip" in no_db.stderr
    only_pypi = tmp_path / "pypi-only"
    (only_pypi / "osv-scalibr").mkdir(parents=True)
    (only_pypi / "osv-scalibr" / "PyPI").symlink_to(db / "osv-scalibr" / "PyPI")
    no_debian = run("--db", str(only_pypi))
    assert no_debian.returncode == 3 and "Debian" in no_debian.stderr, no_debian.stderr
    crashing = tmp_path / "crash.sh"
    crashing.write_text("#!/bin/sh\necho 'osv-scanner version: 2.6.0'\nexit 139\n")
    crashing.chmod(0o755)
    crashed = run("--db", str(db), scanner_path=str(crashing))
    assert crashed.returncode == 3 and "osv-scanner failed" in crashed.stderr, crashed.stderr
    garbage = tmp_path / "garbage.sh"
    garbage.write_text("#!/bin/sh\nfor a; do case $prev in --output-file) echo 'not json' > \"$a\";; esac;"
                       " prev=$a; done\nexit 0\n")
    garbage.chmod(0o755)
    junk = run("--db", str(db), scanner_path=str(garbage))
    assert junk.returncode == 3 and "no JSON" in junk.stderr, junk.stderr
    missing = run("--db", str(db), scanner_path=str(tmp_path / "nowhere"))
    assert missing.returncode == 3 and "not an executable" in missing.stderr, missing.stderr
    stale = tmp_path / "stale"
    shutil.copytree(db, stale)
    month_ago = time.time() - 30 * 86400
    for path in stale.rglob("all.zip"):
        os.utime(path, (month_ago, month_ago))
    old = run("--db", str(stale), "--json", str(tmp_path / "stale.json"))
    assert old.returncode == 0 and "30 days old" in old.stderr, old.stderr
    assert json.loads((tmp_path / "stale.json").read_text())["database"]["stale"] is True


def test_publish_is_refused_until_a_scan_passes_then_a_waiver_lets_it_through(
        scanned, engine, mini_stack, namespace, registry, tmp_path):
    """Where the project names an advisory database, publish needs a passing scan of the id
    the tag points at now, as it needs a passing verdict: never scanned, refused; failing
    (py 1.11.0's advisory has no score: it fails from medium), refused, nothing pushed;
    waived, published."""
    scanner, db, _, _ = scanned
    ref = image_with(engine, f"{namespace}/scan-pub:1.0", mini_stack.python, [(SITE, "py", "1.11.0")])
    project = tmp_path / "project"
    env = {**outside_the_tests_project(), "IMGKIT_OSV_SCANNER": str(scanner)}
    started = subprocess.run([sys.executable, "-m", "imgkit", "init", str(project)], env=env,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    text = (project / "imgkit.toml").read_text()        # top-level keys go before any table
    (project / "imgkit.toml").write_text(f'vulnerability_db = "{db}"\nfail_on = "medium"\n' + text)
    config = docker_config(tmp_path / "docker", {registry.address: (USER, registry.password)})
    env["DOCKER_CONFIG"] = str(config)

    def imgkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True,
                              text=True, timeout=600, cwd=project, env=env)
    assert imgkit("verify", ref, "--gpus", "none").returncode == 0

    def publish(*args: str) -> subprocess.CompletedProcess[str]:
        return imgkit("publish", ref, "--to", registry.address, "--allow-gpu-unverified", *args)
    never = publish()
    assert never.returncode == 1 and "never scanned" in never.stdout, never.stdout + never.stderr
    failing = imgkit("scan", ref, "--metrics", str(tmp_path / "scan.prom"))
    assert failing.returncode == 1 and "FAIL" in failing.stdout, failing.stdout + failing.stderr
    series = (tmp_path / "scan.prom").read_text()             # the scan as metrics too
    assert f'imgkit_scan_passed{{fail_on="medium",image="{ref}"}} 0.0' in series, series
    assert f'imgkit_scan_findings{{image="{ref}",severity="unknown",verdict="fail"}} 1.0' in series
    refused = publish()
    assert refused.returncode == 1 and "its scan failed" in refused.stdout, refused.stdout
    assert "PYSEC-2022-42969 py 1.11.0" in refused.stdout
    assert skopeo_tags(registry, ref.rsplit(":", 1)[0]) == []
    later = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    (project / "images" / "vulnerabilities.yaml").write_text(
        "waivers:\n"
        f"  - {{id: CVE-2022-42969, package: py, ecosystem: PyPI, expires: {later},\n"
        "     reason: the svn support of py is never used here, who: ml-platform}\n")
    assert imgkit("scan", ref).returncode == 0
    # signed, the scan travels as cosign's vuln attestation, and cosign verifies it alone
    subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(tmp_path / "cosign")],
                   env={**env, "COSIGN_PASSWORD": ""}, check=True, capture_output=True)
    env["COSIGN_PASSWORD"] = ""
    published = publish("--signing-key", str(tmp_path / "cosign.key"))
    assert published.returncode == 0, published.stdout + published.stderr
    assert "and the scan" in published.stderr, published.stderr
    repository = ref.rsplit(":", 1)[0]
    digest = skopeo_json("inspect", f"docker://{registry.address}/{ref}", registry=registry)["Digest"]
    done = subprocess.run(["cosign", "verify-attestation", "--key", str(tmp_path / "cosign.pub"),
                           "--type", "vuln", "--insecure-ignore-tlog=true", "--allow-http-registry",
                           f"{registry.address}/{repository}@{digest}"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    statement = json.loads(base64.b64decode(json.loads(done.stdout.splitlines()[0])["payload"]))
    assert statement["predicateType"] == "https://cosign.sigstore.dev/attestation/vuln/v1"
    assert statement["subject"][0]["digest"]["sha256"] == digest.split(":")[1]
    predicate = statement["predicate"]
    assert predicate["scanner"]["version"] == "2.6.0" and predicate["metadata"]["scanFinishedOn"]
    result = predicate["scanner"]["result"]
    assert result["failed"] is False and result["image_id"] == engine.image(ref).id
    assert {f["package"]: f["verdict"] for f in result["findings"]}["py"] == "waived"
    # promote, where the project gates on scans, needs that signed, passing scan as well
    def promote(source: str) -> subprocess.CompletedProcess[str]:
        return imgkit("promote", source, "--to", f"{registry.address}/prod/scanned", "--tag",
                      "stable", "--trusted-key", str(tmp_path / "cosign.pub"),
                      "--allow-gpu-unverified")
    promoted = promote(f"{registry.address}/{repository}@{digest}")
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert skopeo_tags(registry, "prod/scanned") != []
    # a second image with a signed verdict and no scan: publish in a project that names no
    # database signs the verdict alone; promote in this one refuses it, copying nothing
    other = image_with(engine, f"{namespace}/scan-pub:2.0", mini_stack.python,
                       [(SITE, "py", "1.11.0"), (SITE, "requests", "2.32.0")])
    unscanned = {k: v for k, v in env.items() if k != "IMGKIT_OSV_SCANNER"}
    plain = subprocess.run([sys.executable, "-m", "imgkit", "verify", other, "--gpus", "none"],
                           capture_output=True, text=True, timeout=600, cwd=tmp_path, env=unscanned)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    signed_alone = subprocess.run([sys.executable, "-m", "imgkit", "publish", other, "--to",
                                   registry.address, "--allow-gpu-unverified", "--signing-key",
                                   str(tmp_path / "cosign.key")], capture_output=True, text=True,
                                  timeout=600, cwd=tmp_path, env=unscanned)
    assert signed_alone.returncode == 0, signed_alone.stdout + signed_alone.stderr
    other_digest = skopeo_json("inspect", f"docker://{registry.address}/{other}",
                               registry=registry)["Digest"]
    refused = promote(f"{registry.address}/{other.rsplit(':', 1)[0]}@{other_digest}")
    assert refused.returncode == 1 and "no signed scan" in refused.stdout, \
        refused.stdout + refused.stderr
    # the admission rule `imgkit export policy` writes in this project demands the signed,
    # passing scan too: cosign runs it, admitting the scanned image and not the other
    exported = imgkit("export", "policy", "--out", str(tmp_path / "policy"), "--registry",
                      registry.address, "--trusted-key", str(tmp_path / "cosign.pub"))
    assert exported.returncode == 0, exported.stderr

    def admitted(reference: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["cosign", "verify-attestation", "--key", str(tmp_path / "cosign.pub"),
                               "--type", "vuln", "--insecure-ignore-tlog=true",
                               "--allow-http-registry", "--policy",
                               str(tmp_path / "policy" / "imgkit-scan.cue"), reference],
                              env=env, capture_output=True, text=True, timeout=120)
    assert admitted(f"{registry.address}/{repository}@{digest}").returncode == 0
    assert admitted(f"{registry.address}/{other.rsplit(':', 1)[0]}@{other_digest}").returncode != 0
    # check-signed, the deploy gate, holds the same rule
    def check_signed(source: str) -> subprocess.CompletedProcess[str]:
        return imgkit("check-signed", source, "--trusted-key", str(tmp_path / "cosign.pub"),
                      "--allow-gpu-unverified")
    unscanned_gate = check_signed(f"{registry.address}/{other.rsplit(':', 1)[0]}@{other_digest}")
    assert unscanned_gate.returncode == 1 and "no signed scan" in unscanned_gate.stdout, \
        unscanned_gate.stdout + unscanned_gate.stderr
    scanned_gate = check_signed(f"{registry.address}/{repository}@{digest}")
    assert scanned_gate.returncode == 0 and "verdict and scan are attached" in scanned_gate.stdout, \
        scanned_gate.stdout + scanned_gate.stderr
    tags = skopeo_tags(registry, "prod/scanned")
    assert "stable" in tags and f"id-{engine.image(other).id[7:23]}" not in tags, tags
    assert f"id-{engine.image(ref).id[7:23]}" in tags, tags       # the first's, copied before
    # in a pipeline the scan rides with the verify job: the signed attest, in a project
    # that gates on scans, scans the image it verified (none is kept for it) and attaches
    # the scan beside the verdict, and promote lets the image through
    source = f"{registry.address}/{other.rsplit(':', 1)[0]}@{other_digest}"
    attested = imgkit("attest", source, "--gpus", "none", "--signing-key",
                      str(tmp_path / "cosign.key"))
    assert attested.returncode == 0 and "and the scan" in attested.stderr, \
        attested.stdout + attested.stderr
    assert "scanned in" in attested.stderr, attested.stderr       # made by attest, now
    promoted = promote(source)
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert f"id-{engine.image(other).id[7:23]}" in skopeo_tags(registry, "prod/scanned")
    assert admitted(source).returncode == 0
    # a signed scan that says it failed is not admitted, whoever signed it
    failing = json.loads(json.dumps(predicate))
    failing["scanner"]["result"]["failed"] = True
    (tmp_path / "failing.json").write_text(json.dumps(failing))
    subprocess.run(["cosign", "attest", "--key", str(tmp_path / "cosign.key"), "--type", "vuln",
                    "--predicate", str(tmp_path / "failing.json"), "--tlog-upload=false",
                    "--allow-http-registry", "--yes", source],
                   env=env, capture_output=True, text=True, timeout=120, check=True)
    refused_by_policy = admitted(source)
    assert refused_by_policy.returncode != 0 and "failed" in refused_by_policy.stderr, \
        refused_by_policy.stderr


def test_the_weekly_rescan_scans_what_production_serves_and_fails_on_a_new_finding(
        scanned, engine, registry, mini_stack, tmp_path) -> None:
    """The scheduled job `imgkit ci` writes for a project that gates on scans, run as its
    runner would: the day's advisories fetched (from a stand-in for osv.dev), each final
    image's production tag pulled by digest and scanned, every result kept, and the job
    red because one image fails today's gate, naming the finding and its fix."""
    from imgkit.export.jobs import rescan_jobs
    from imgkit.matrix.plan import Plan
    from imgkit.options import CiSettings
    from imgkit.registry.destination import parse_destination

    from .helpers.scanner import served_bucket
    scanner, _, hits, _ = scanned
    prod = parse_destination(f"{registry.address}/prod")
    failing, passing = "rescan/vulnerable:1.0", "rescan/current:1.0"
    config = docker_config(tmp_path / "docker", {registry.address: (USER, registry.password)})
    for local, final in ((hits, failing), (mini_stack.python, passing)):
        served = f"{prod.registry}/{prod.repository(final)}:{final.rsplit(':', 1)[1]}"
        engine.client.images.get(local).tag(served)
        engine.push(served, (USER, registry.password))
        engine.client.images.remove(served)             # the job must pull what production serves
    project = tmp_path / "checkout"
    project.mkdir()
    (project / "imgkit.toml").write_text('vulnerability_db = "advisories"\n')
    settings = CiSettings(registry=prod, staging=parse_destination(f"{registry.address}/staging"),
                          advisories="advisories")
    [job] = rescan_jobs(Plan(targets=(), finals=(failing, passing)), settings)
    with served_bucket(tmp_path / "osv") as source:
        done = subprocess.run(["bash", "-c", "\n".join(["set -eu", *job.commands])],
                              cwd=project, capture_output=True, text=True, timeout=900,
                              env={**outside_the_tests_project(), "DOCKER_CONFIG": str(config),
                                   "IMGKIT_OSV_SOURCE": source, "IMGKIT_OSV_SCANNER": str(scanner),
                                   "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "PyPI fetched from" in said                  # the day's advisories, first
    results = {p.name: json.loads(p.read_text()) for p in (project / job.keeps).glob("*.json")}
    assert len(results) == 2, said                      # the failing one did not stop the other
    bad = next(r for r in results.values() if r["image"].endswith(failing))
    good = next(r for r in results.values() if r["image"].endswith(passing))
    assert bad["failed"] is True and good["failed"] is False, said
    assert any(f["id"] == "GHSA-cx63-2mw6-8hw5" and f["verdict"] == "fail" and f["fixed"] == ["70.0.0"]
               for f in bad["findings"]), bad["findings"]
    assert "FAIL" in said and "setuptools 65.5.0 -> 70.0.0" in said, said
    pulled = engine.image(f"{prod.registry}/{prod.repository(failing)}:1.0")
    assert pulled is not None and pulled.id == engine.image(hits).id   # exactly what was pushed
    for final in (failing, passing):                   # the runner's pulls, not left behind
        for ref in engine.image(f"{prod.registry}/{prod.repository(final)}:1.0").tags:
            if ref.startswith(prod.registry):
                engine.client.images.remove(ref)


def test_the_site_shows_the_signed_scan_production_holds(scanned, engine, registry, mini_stack,
                                                         namespace, tmp_path) -> None:
    """A pipeline's site is made where no scan ran: with --registry, in a project that gates
    on scans, each promoted image's page shows the newest scan signed with the trusted key
    that production holds of it (here attest's, in another cache than the site's)."""
    from .helpers.images import mini_project
    scanner, db, _, _ = scanned
    project = mini_project(tmp_path / "project")
    (project / "imgkit.toml").write_text(f'vulnerability_db = "{db}"\n')
    config = docker_config(tmp_path / "docker", {registry.address: (USER, registry.password)})
    name, version = mini_stack.mini.rsplit(":", 1)
    ref = f"{registry.address}/prod/{name}:{version}"
    engine.tag(engine.image(mini_stack.mini).id, ref)
    engine.push(ref, (USER, registry.password))
    digest = skopeo_json("inspect", f"docker://{ref}", registry=registry)["Digest"]
    env = {**outside_the_tests_project(), "DOCKER_CONFIG": str(config), "COSIGN_PASSWORD": "",
           "IMGKIT_OSV_SCANNER": str(scanner)}
    subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(tmp_path / "cosign")],
                   env=env, check=True, capture_output=True, cwd=tmp_path)

    def imgkit(cache: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                              timeout=600, cwd=project,
                              env={**env, "IMGKIT_CACHE_DIR": str(tmp_path / cache)})
    try:
        attested = imgkit("runner", "attest", f"{ref.rsplit(':', 1)[0]}@{digest}", "--gpus", "none",
                          "--signing-key", str(tmp_path / "cosign.key"),
                          "--json", str(tmp_path / "verdicts" / "verify-mini.json"))
        assert attested.returncode == 0 and "and the scan" in attested.stderr, \
            attested.stdout + attested.stderr
        made = imgkit("pages", "site", "--namespace", namespace, "--verdicts",
                      str(tmp_path / "verdicts"), "--registry", f"{registry.address}/prod",
                      "--trusted-key", str(tmp_path / "cosign.pub"), "--out", str(tmp_path / "site"))
        assert made.returncode == 0, made.stdout + made.stderr
        page = next((tmp_path / "site" / "images").glob("*cuda*.html")).read_text()
        shown = page[page.index("<h3>Known vulnerabilities</h3>"):]
        assert "(the signed scan the registry holds of it)" in shown, shown[:800]
        assert "<b>passed (fail_on: high): 0 findings, 0 failing, 0 waived</b>" in shown, shown[:800]
    finally:
        engine.client.images.remove(ref)
