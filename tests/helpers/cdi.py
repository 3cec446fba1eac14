"""A test-only CDI spec that proves the whole CDI path with no GPU (a device node that is
/dev/null's, an environment variable and a mounted file), and the declared check that looks
for those edits inside the probe's container. Docker's tests rename /dev/null's node
(`path` /dev/imgkit-cdi0); Podman's rootless runc binds a node from the same path on the
host, so its tests make a node of their own and use it on both sides."""
from __future__ import annotations

SPEC = """\
cdiVersion: "0.5.0"
kind: {kind}
devices:
  - name: dev0
    containerEdits:
      deviceNodes:
        - path: {path}
          hostPath: {host_path}
containerEdits:
  env:
    - IMGKIT_CDI_TEST={token}
  mounts:
    - hostPath: {stub}
      containerPath: /opt/imgkit-cdi/stub.txt
      options: [ro, bind]
"""
LOOKS = """\
schemaVersion: 2.0.0
commandTests:
  - name: the spec's edits arrived
    command: sh
    args: ["-c", "test -c {path} && echo env=$IMGKIT_CDI_TEST &&
                  cat /opt/imgkit-cdi/stub.txt"]
    expectedOutput: ["env={token}", "stub {token}"]
"""
