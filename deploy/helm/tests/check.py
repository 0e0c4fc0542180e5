#!/usr/bin/env python3
"""Asserts on the chart's rendered manifests: check.py SET MANIFESTS.yaml

SET is a value set's name (deploy/helm/tests/SET.yaml): the checks every set gets, then that
set's own. Prints one line per failed assertion and exits 1 if any failed. The release is
rendered as `helm template prod deploy/helm/baton --namespace ns` (full name prod-baton).
"""

import sys

import yaml

FULL = "prod-baton"
NS = "ns"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def load(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    return by_kind


def one(objs, kind):
    found = objs.get(kind, [])
    check(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0] if found else {}


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def value(env, name):
    e = env.get(name)
    return None if e is None else e.get("value")


def common(objs, full):
    dep = one(objs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = env_of(c)
    check(dep["metadata"]["name"] == full, f"Deployment is named {full}")
    check(pod.get("enableServiceLinks") is False, "enableServiceLinks: false on the pod")
    check(pod.get("automountServiceAccountToken") is False, "no service account token mounted")
    psc, csc = pod["securityContext"], c["securityContext"]
    check(psc.get("runAsNonRoot") and psc.get("runAsUser") == 65532, "pod runs as non-root 65532")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "pod seccomp RuntimeDefault")
    check(csc.get("readOnlyRootFilesystem") is True, "read-only root filesystem")
    check(csc.get("allowPrivilegeEscalation") is False, "no privilege escalation")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], "drop ALL capabilities")
    check(c["args"] == ["serve"], "container runs `serve`")
    check(value(env, "BATON_LISTEN") == "0.0.0.0:50051", "BATON_LISTEN=0.0.0.0:50051")
    check("valueFrom" in env.get("BATON_REPLICA_ID", {}), "BATON_REPLICA_ID from the pod name")
    check(any(m["mountPath"] == "/tmp" for m in c["volumeMounts"]), "/tmp is an emptyDir")
    grace = pod["terminationGracePeriodSeconds"]
    shutdown_ms = int(value(env, "BATON_SHUTDOWN_TIMEOUT_MS"))
    pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    check(grace * 1000 > shutdown_ms + pre * 1000, "terminationGracePeriodSeconds > preStop + shutdown_timeout_ms")
    check(c["resources"]["requests"] and c["resources"]["limits"]["memory"], "resources set")
    svc = one(objs, "Service")
    check(svc["metadata"]["name"] == full, f"Service is named {full}")
    grpc = [p for p in svc["spec"]["ports"] if p["name"] == "grpc"]
    check(grpc and grpc[0]["port"] == 50051 and grpc[0].get("appProtocol") == "grpc", "Service grpc port 50051 appProtocol grpc")
    tls = "BATON_TLS__CERT_FILE" in env
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe, {})
        if tls:
            cmd = p.get("exec", {}).get("command", [])
            check(cmd[:2] == ["/usr/local/bin/baton", "probe"], f"{probe} runs `baton probe` over TLS")
            check(any(a.startswith("https://") for a in cmd), f"{probe} dials https://")
        else:
            check(p.get("grpc") == {"port": 50051, "service": ""}, f"{probe} is a native grpc probe on 50051")
    for o in sum(objs.values(), []):
        check(o["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == "prod", f"{o['kind']} has the instance label")
    return dep, pod, c, env


def set_checks(name, objs):
    full = "baton" if name == "replicas3" else FULL
    dep, pod, c, env = common(objs, full)
    console = name == "console"
    if not console:
        check(value(env, "BATON_CONSOLE__LISTEN") == "", 'console off: BATON_CONSOLE__LISTEN=""')
        check(all(p["name"] != "console" for p in c["ports"]), "no console port")
    if name != "embedded":
        check("BATON_DATA_DIR" not in env, "no embedded Redis")
        check("BATON_REDIS_URL" in env, "BATON_REDIS_URL set")
    kinds = set(objs)
    if name == "redis-url":
        check(value(env, "BATON_REDIS_URL") == "redis://redis-master.data.svc.cluster.local:6379", "redis.url rendered")
        check(dep["spec"]["replicas"] == 2, "2 replicas by default")
        pdb = one(objs, "PodDisruptionBudget")
        check(pdb.get("spec", {}).get("minAvailable") == 1, "PDB minAvailable 1")
        check(not kinds & {"ServiceMonitor", "NetworkPolicy", "ScaledObject", "TriggerAuthentication", "ConfigMap"}, "nothing optional by default")
        check("BATON_CONFIG" not in env and "BATON_AUTH__TOKENS_FILE" not in env, "no config file, no tokens")
        check("hostAliases" not in pod, "no hostAliases without TLS")
        check(value(env, "BATON_METRICS_LISTEN") == "0.0.0.0:9464", "metrics on 0.0.0.0:9464")
        check(dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0, "rolling update keeps every replica serving")
    elif name == "redis-secret":
        ref = env["BATON_REDIS_URL"].get("valueFrom", {}).get("secretKeyRef", {})
        check(ref == {"name": "baton-redis", "key": "url"}, "BATON_REDIS_URL from the Secret")
        check(value(env, "BATON_REDIS__TLS_CA_FILE") == "/etc/baton/redis-tls/ca.crt", "Redis TLS CA")
        check(value(env, "BATON_REDIS__TLS_CERT_FILE") == "/etc/baton/redis-tls/tls.crt", "Redis TLS client cert")
        check(value(env, "BATON_REDIS__TLS_KEY_FILE") == "/etc/baton/redis-tls/tls.key", "Redis TLS client key")
        check(env["BATON_REDIS__SENTINEL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "baton-sentinel", "sentinel password from the Secret")
        check("BATON_REDIS__SENTINEL_USERNAME" in env, "sentinel username from the Secret")
        check(value(env, "BATON_CONFIG") == "/etc/baton/baton.toml", "BATON_CONFIG")
        cm = one(objs, "ConfigMap")
        check('key_prefix = "prod:"' in cm.get("data", {}).get("baton.toml", ""), "config rendered into the ConfigMap")
        names = [e["name"] for e in c["env"]]
        check(names[-1] == "RUST_LOG", "extraEnv comes last (wins)")
        check(any(v.get("secret", {}).get("secretName") == "baton-redis-tls" for v in pod["volumes"]), "Redis TLS Secret mounted")
    elif name == "embedded":
        check(dep["spec"]["replicas"] == 1, "embedded: 1 replica")
        check(value(env, "BATON_DATA_DIR") == "/data", "BATON_DATA_DIR=/data")
        check("BATON_REDIS_URL" not in env, "embedded: no BATON_REDIS_URL")
        check(any(v["name"] == "data" and "emptyDir" in v for v in pod["volumes"]), "/data is an emptyDir")
        check(dep["spec"]["strategy"]["type"] == "Recreate", "embedded: Recreate")
        check("PodDisruptionBudget" not in kinds, "no PDB for one replica")
    elif name == "tls-tokens":
        check(value(env, "BATON_TLS__CERT_FILE") == "/etc/baton/tls/tls.crt", "tls.cert_file")
        check(value(env, "BATON_TLS__KEY_FILE") == "/etc/baton/tls/tls.key", "tls.key_file")
        check(value(env, "BATON_TLS__CLIENT_CA_FILE") == "/etc/baton/tls/ca.crt", "tls.client_ca_file")
        check(value(env, "BATON_TLS__METRICS") == "true", "tls.metrics")
        check(value(env, "BATON_AUTH__TOKENS_FILE") == "/etc/baton/auth/tokens.toml", "auth.tokens_file")
        check(value(env, "BATON_METRICS_TOKEN_SHA256", ).startswith("9f86"), "metrics_token_sha256")
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        check(mounts.get("tls", {}).get("readOnly") and mounts.get("auth", {}).get("readOnly"), "TLS and tokens mounted read-only")
        check("subPath" not in mounts.get("tls", {}), "TLS mounted as a directory (renewals reach Baton)")
        host = f"{FULL}.{NS}.svc.cluster.local"
        check(pod.get("hostAliases") == [{"ip": "127.0.0.1", "hostnames": [host]}], "probe host mapped to 127.0.0.1")
        cmd = c["readinessProbe"]["exec"]["command"]
        check(f"https://{host}:50051" in cmd, "probe dials the certificate's name")
        check("--ca-file" in cmd and "--client-cert" in cmd and "--client-key" in cmd, "probe presents CA and client certificate")
    elif name == "monitoring":
        sm = one(objs, "ServiceMonitor")
        ep = sm["spec"]["endpoints"][0]
        check(sm["metadata"]["namespace"] == "monitoring", "ServiceMonitor in its namespace")
        check(sm["spec"]["namespaceSelector"]["matchNames"] == [NS], "ServiceMonitor selects the release namespace")
        check(ep["port"] == "metrics" and ep["scheme"] == "http", "ServiceMonitor scrapes metrics over http")
        check(ep.get("authorization", {}).get("credentials", {}).get("name") == "baton-metrics-token", "ServiceMonitor sends the token")
        np = one(objs, "NetworkPolicy")
        ports = [p["port"] for r in np["spec"]["ingress"] for p in r["ports"]]
        check(ports == ["grpc", "metrics"], "NetworkPolicy ingress: grpc and metrics")
        check(np["spec"]["ingress"][1]["from"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}, "metrics from the monitoring namespace")
        eports = [p["port"] for r in np["spec"]["egress"] for p in r["ports"]]
        check(6379 in eports and 53 in eports, "egress to Redis and DNS")
        pdb = one(objs, "PodDisruptionBudget")
        check(pdb.get("spec", {}).get("maxUnavailable") == 1 and "minAvailable" not in pdb.get("spec", {}), "PDB maxUnavailable 1")
    elif name == "console":
        check(value(env, "BATON_CONSOLE__LISTEN") == "0.0.0.0:9465", "console listens on 0.0.0.0:9465")
        check(value(env, "BATON_CONSOLE__ALLOW_REMOTE") == "true", "console.allow_remote")
        check(value(env, "BATON_CONSOLE__READ_ONLY") == "true", "console.read_only")
        svc = one(objs, "Service")
        check(any(p["name"] == "console" and p["port"] == 9465 for p in svc["spec"]["ports"]), "Service console port")
    elif name == "keda":
        sos = {o["metadata"]["name"]: o for o in objs.get("ScaledObject", [])}
        check(set(sos) == {"billing-workers", "gpu-claimers"}, "two ScaledObjects")
        b = sos.get("billing-workers", {}).get("spec", {})
        t = b.get("triggers", [{}])[0]
        check(t.get("type") == "external-push", "trigger external-push")
        md = t.get("metadata", {})
        check(md.get("scalerAddress") == f"{FULL}.{NS}.svc.cluster.local:50051", "scalerAddress is Baton's Service")
        check(md.get("queue") == "billing" and md.get("targetSize") == "10", "queue and targetSize")
        check(b.get("scaleTargetRef") == {"name": "billing-worker"} and b.get("minReplicaCount") == 0 and b.get("maxReplicaCount") == 20, "billing scale target and bounds")
        g = sos.get("gpu-claimers", {}).get("spec", {})
        gmd = g.get("triggers", [{}])[0].get("metadata", {})
        check(gmd.get("pool") == "gpu" and gmd.get("activationTargetSize") == "1" and "queue" not in gmd, "pool and activationTargetSize")
        check(g.get("pollingInterval") == 15 and g.get("cooldownPeriod") == 120 and g.get("minReplicaCount") == 1, "gpu polling and cooldown")
        ta = one(objs, "TriggerAuthentication")
        params = {r["parameter"]: (r["name"], r["key"]) for r in ta.get("spec", {}).get("secretTargetRef", [])}
        check(params == {"caCert": ("keda-baton-client", "ca.crt"), "tlsClientCert": ("keda-baton-client", "tls.crt"), "tlsClientKey": ("keda-baton-client", "tls.key")}, "TriggerAuthentication: CA and client certificate")
        check(t.get("authenticationRef", {}).get("name") == ta.get("metadata", {}).get("name"), "trigger uses the TriggerAuthentication")
    elif name == "replicas3":
        check(dep["spec"]["replicas"] == 3, "3 replicas")
        check(pod.get("enableServiceLinks") is False, "a Service named baton, and no service links")
        tsc = pod.get("topologySpreadConstraints", [])
        check(len(tsc) == 2 and all(t.get("labelSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/instance") == "prod" for t in tsc), "spread constraints get the selector labels")
        check(pod.get("tolerations", [{}])[0].get("key") == "dedicated" and pod.get("nodeSelector") == {"kubernetes.io/os": "linux"}, "tolerations and nodeSelector")
        meta = dep["spec"]["template"]["metadata"]
        check(meta["annotations"].get("example.com/team") == "platform" and meta["labels"].get("tier") == "coordination", "pod annotations and labels")
        check("PodDisruptionBudget" in kinds, "PDB for 3 replicas")
    else:
        failures.append(f"no checks for value set {name}: add them to check.py")


def main():
    name, path = sys.argv[1], sys.argv[2]
    set_checks(name, load(path))
    for f in failures:
        print(f"  FAILED: {name}: {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
