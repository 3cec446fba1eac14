"""A team's own families, as a team writes them (a chain of three)."""
from __future__ import annotations

TEAM = """\
family: team
extends: {family: base}
repository: team/app
apt: [tini]
user: {name: ml, uid: 1001}
entrypoint: ["/usr/bin/tini", "--"]
cmd: ["python3", "-c", "print('hi')"]
labels: {com.example.team: ml-platform}
env: {APP_HOME: /workspace/app}
workdir: /workspace/app
ports: [8080]
run:
  - echo built-by-run > /etc/team-marker
"""


TEAM2 = "family: team2\nextends: {family: team}\nrepository: team/app2\napt: [jq]\n"
