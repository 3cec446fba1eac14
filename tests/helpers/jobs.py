"""A Kubernetes Job of `imgkit export k8s` run with plain `docker run`, and what a verdict
file says of its checks."""
from __future__ import annotations

import io
from pathlib import Path

from imgkit.verify.run import VerifyOptions, verify

from .images import no_verify_containers


def derive(engine, namespace: str, parent: str, name: str, steps: str) -> str:
    """A broken image made from `parent` with a few Dockerfile lines."""
    ref = f"{namespace}/broken:{name}"
    dockerfile = f"FROM {parent}\nUSER root\n{steps}\nUSER imgkit\n"
    engine.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=ref, rm=True,
                               forcerm=True)
    return ref


def failed(engine, ref: str, **kw) -> dict[str, str]:
    verdict = verify(engine, ref, VerifyOptions(gpus="none", **kw))
    assert no_verify_containers(engine) == []
    return {c.name: c.diagnosis for c in verdict.failed}


# -- verification as a Kubernetes Job ---------------------------------------------------------
def run_job_command(engine, job_dir: Path, image: str) -> str:
    """What the kubelet would run: the exported Job's own command, as its user, with a
    read-only root, the probe from the ConfigMap mounted, a writable /tmp; its stdout."""
    import base64

    import yaml
    configmap = yaml.safe_load((job_dir / "probe-configmap.yaml").read_text())
    probe_dir = job_dir / "mounted-probe"
    probe_dir.mkdir()
    (probe_dir / "probe.zip").write_bytes(base64.b64decode(configmap["binaryData"]["probe.zip"]))
    job = yaml.safe_load(next(job_dir.glob("verify-*.yaml")).read_text())
    container = job["spec"]["template"]["spec"]["containers"][0]
    mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "probe")
    security = job["spec"]["template"]["spec"]["securityContext"]
    out = engine.client.containers.run(
        image, entrypoint=container["command"][:1], command=container["command"][1:],
        user=f"{security['runAsUser']}:{security['runAsGroup']}", read_only=True,
        tmpfs={"/tmp": ""}, environment={e["name"]: e["value"] for e in container["env"]},
        volumes={str(probe_dir): {"bind": mount, "mode": "ro"}}, remove=True, stdout=True,
        stderr=False)
    return out.decode()
