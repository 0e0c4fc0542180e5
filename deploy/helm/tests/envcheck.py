#!/usr/bin/env python3
"""Runs `baton config` with the environment the chart gives Baton: envcheck.py SET MANIFESTS BATON

Every variable the rendered Deployment sets must be a Baton configuration key (Baton warns
about the others), and the configuration must load: the `config` TOML (from the ConfigMap),
the tokens file and the paths under /etc/baton, which are laid out in a scratch directory
(secrets become placeholders: a Redis URL, an empty tokens file). Exits 1 on a failure.
"""

import os
import subprocess
import sys
import tempfile

import yaml

PLACEHOLDERS = {
    "BATON_REDIS_URL": "redis://redis.example:6379",
    "BATON_REPLICA_ID": "prod-baton-0",
    "BATON_REDIS__SENTINEL_USERNAME": "sentinel",
    "BATON_REDIS__SENTINEL_PASSWORD": "secret",
}


def main():
    name, path, baton = sys.argv[1:4]
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    container = dep["spec"]["template"]["spec"]["containers"][0]
    with tempfile.TemporaryDirectory() as root:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for e in container.get("env", []):
            if "value" in e:
                value = e["value"]
            elif e["name"] in PLACEHOLDERS:
                value = PLACEHOLDERS[e["name"]]
            else:
                continue  # e.g. RUST_LOG from extraEnv
            if value.startswith("/etc/baton/"):
                value = os.path.join(root, value.lstrip("/"))
                os.makedirs(os.path.dirname(value), exist_ok=True)
                content = "# placeholder\n"
                if value.endswith("baton.toml"):
                    content = next(iter(cms.values()))["data"]["baton.toml"]
                with open(value, "w") as f:
                    f.write(content)
                os.chmod(value, 0o600)
            env[e["name"]] = value
        run = subprocess.run([baton, "config"], env=env, capture_output=True, text=True, cwd=root)
    problems = []
    if run.returncode != 0:
        problems.append(f"baton config exited {run.returncode}: {run.stderr.strip()}")
    if "not Baton configuration" in run.stderr:
        problems.append(f"variables Baton does not know: {run.stderr.strip()}")
    out = run.stdout
    console_on = any(e["name"] == "BATON_CONSOLE__LISTEN" and e.get("value") for e in container["env"])
    if run.returncode == 0 and not console_on and '[console]\nlisten = ""' not in out:
        problems.append("the console is not off in Baton's effective configuration")
    for p in problems:
        print(f"  FAILED: {name}: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
