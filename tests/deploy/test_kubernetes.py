"""deploy/kubernetes: every manifest valid against a pinned Kubernetes release's schemas in
strict mode (an unknown field is an error), and the manifests agreeing with each other and
with the gateway config they carry (no cluster, no network)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from gateway.cli import build_parser
from gateway.config.root import Config, parse_yaml
from gateway.discovery.expand import Address, expansion
from gateway.process.preflight import preflight
from gateway.telemetry.metrics import GatewayMetrics

KUBERNETES_VERSION = "1.31.0"
"""The oldest release the manifests are for: every field they use exists there (the PDB's
unhealthyPodEvictionPolicy is GA from 1.31), and none has been removed since."""
ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
SECRET = "switchyard-secrets"
UVICORN_MARGIN_S = 5  # uvicorn's own graceful timeout is shutdown_drain_s + 5 s


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


@functools.cache
def _kustomization() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text("utf-8"))
    return data


def _generated() -> list[dict[str, Any]]:
    """The ConfigMaps kustomization.yaml generates (names without a hash suffix)."""
    maps = []
    for generator in _kustomization()["configMapGenerator"]:
        files = [K8S / f for f in generator["files"]]
        data = {f.name: f.read_text(encoding="utf-8") for f in files}
        metadata = {"name": generator["name"]}
        maps.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
    return maps


def _every_document() -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, document) for every manifest of the directory, applied or example, and the
    generated ConfigMaps."""
    for path in sorted(K8S.rglob("*.yaml")):
        if path.name == "kustomization.yaml" or path.parent.name == "config":
            continue
        for doc in _documents(path):
            yield f"{path.relative_to(K8S)}:{doc['kind']}/{doc['metadata']['name']}", doc
    for doc in _generated():
        yield f"configMapGenerator:{doc['metadata']['name']}", doc


@pytest.mark.parametrize(("where", "doc"), list(_every_document()), ids=lambda v: str(v)[:60])
def test_every_manifest_validates_strictly(where: str, doc: dict[str, Any]) -> None:
    assert kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True) == "1.31", where


def test_the_kustomization_lists_every_manifest() -> None:
    kustomization = _kustomization()
    applied = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == applied
    generated = [f for g in kustomization["configMapGenerator"] for f in g["files"]]
    assert sorted(generated) == sorted(str(p.relative_to(K8S)) for p in (K8S / "config").iterdir())
    assert kustomization["namespace"] == _one("Namespace")["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (kustomize) not installed")
def test_kustomize_builds_what_the_tests_read() -> None:
    built = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    assert sorted(_key(d) for d in docs) == sorted(_key(d) for d in _manifests())
    namespace = _kustomization()["namespace"]
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        assert doc["kind"] == "Namespace" or doc["metadata"]["namespace"] == namespace
    # The config keeps its name (the pods' volume is updated in place); the script's gets a
    # hash suffix, and the Deployment follows it.
    maps = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    assert "switchyard-config" in maps
    (reloader,) = [n for n in maps if n.startswith("switchyard-reloader-")]
    (gateway,) = [d for d in docs if _key(d) == ("Deployment", "switchyard")]
    volumes = {v["name"]: v for v in gateway["spec"]["template"]["spec"]["volumes"]}
    assert volumes["reloader"]["configMap"]["name"] == reloader


def _key(doc: Mapping[str, Any]) -> tuple[str, str]:
    name: str = doc["metadata"]["name"]
    if doc["kind"] == "ConfigMap" and name.startswith("switchyard-reloader"):
        name = "switchyard-reloader"
    return doc["kind"], name


@functools.cache
def _manifests() -> list[dict[str, Any]]:
    """What `kubectl apply -k` applies (read once: the tests only read it)."""
    docs = [d for name in _kustomization()["resources"] for d in _documents(K8S / name)]
    return docs + _generated()


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    (found,) = [
        d for d in _manifests() if d["kind"] == kind and name in (None, d["metadata"]["name"])
    ]
    return found


def _pod(workload: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def _container(workload: Mapping[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in _pod(workload)["containers"] if c["name"] == name]
    return found


def _env(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def _labels(workload: Mapping[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def _selects(selector: Mapping[str, str], workload: Mapping[str, Any]) -> bool:
    return selector.items() <= _labels(workload).items()


def _port(container: Mapping[str, Any], port: int | str) -> int:
    """A probe's or Service's port, by number or by the container port's name."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return int(number)


def _mounted_file(workload: Mapping[str, Any], container: str, path: str) -> tuple[str, str]:
    """(ConfigMap, key) that `path` in `container` is, through a directory mount."""
    target = PurePosixPath(path)
    mounts = {m["mountPath"]: m["name"] for m in _container(workload, container)["volumeMounts"]}
    volume_name = mounts[str(target.parent)]
    (volume,) = [v for v in _pod(workload)["volumes"] if v["name"] == volume_name]
    return volume["configMap"]["name"], target.name


GATEWAY = _one("Deployment", "switchyard")
ENGINE = _one("StatefulSet", "vllm")
REDIS = _one("Deployment", "redis")
WORKLOADS = {"gateway": GATEWAY, "engine": ENGINE, "redis": REDIS}


@pytest.fixture(scope="module")
def config() -> Config:
    data = _one("ConfigMap", "switchyard-config")["data"]
    return parse_yaml(data["config.yaml"], "ConfigMap switchyard-config")


def _named_env(config: Config) -> set[str]:
    """Every environment variable the config names in a `*_env` field."""
    server = config.server
    names = {server.api_keys_env, server.admin_keys_env, server.metrics_token_env}
    names |= {config.keys.secret_env} | {b.api_key_env for b in config.backends}
    return {n for n in names if n}


def _from_secret(var: Mapping[str, Any]) -> dict[str, Any]:
    ref: dict[str, Any] = var["valueFrom"]["secretKeyRef"]
    assert ref["name"] == SECRET
    return ref


def test_the_secret_provides_every_variable_the_config_names(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _env(_container(GATEWAY, "gateway"))
    for name in _named_env(config):
        ref = _from_secret(env[name])
        assert ref["key"] == name  # `kubectl create secret --from-env-file` names them so
        # Only what virtual keys need may be missing while they are off.
        assert ref.get("optional", False) == (name == config.keys.secret_env)
    assert not config.keys.enabled
    # With the Secret's entries set, serve starts on the pod's address without a warning.
    for name in _named_env(config):
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    found = preflight(config, config.server.host)
    assert (found.errors, found.warnings) == ((), ())
    # The sidecar asks for reloads with an admin key, the engines take the backends' key.
    admin = config.server.admin_keys_env
    assert admin is not None
    assert _from_secret(_env(_container(GATEWAY, "reloader"))[admin])["key"] == admin
    keys = {b.api_key_env for b in config.backends}
    engine_env = _env(_container(ENGINE, "vllm"))
    assert keys == {"VLLM_API_KEY"} and _from_secret(engine_env["VLLM_API_KEY"])["key"] in keys


def test_the_gateway_listens_where_its_probes_and_service_look(config: Config) -> None:
    assert config.server.host == "0.0.0.0" and config.clients_need_keys
    gateway = _container(GATEWAY, "gateway")
    args = build_parser().parse_args(gateway["args"])  # every flag exists
    assert (args.command, args.host, args.port, args.workers) == ("serve", None, None, 1)
    assert _mounted_file(GATEWAY, "gateway", args.config) == ("switchyard-config", "config.yaml")
    port = config.server.port
    probes = {kind: gateway[f"{kind}Probe"]["httpGet"] for kind in ("startup", "liveness")}
    probes["readiness"] = gateway["readinessProbe"]["httpGet"]
    assert {k: p["path"] for k, p in probes.items()} == {
        "startup": "/healthz",
        "liveness": "/healthz",
        "readiness": "/readyz",
    }
    assert {_port(gateway, p["port"]) for p in probes.values()} == {port}
    service = _one("Service", "switchyard")
    assert service["spec"]["selector"] == GATEWAY["spec"]["selector"]["matchLabels"]
    assert _selects(service["spec"]["selector"], GATEWAY)
    (service_port,) = service["spec"]["ports"]
    assert _port(gateway, service_port["targetPort"]) == port
    annotations = GATEWAY["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)
    assert annotations["prometheus.io/path"] == "/metrics"


def test_the_reloader_watches_the_config_and_asks_its_own_gateway(config: Config) -> None:
    reloader = _container(GATEWAY, "reloader")
    env = {name: var.get("value") for name, var in _env(reloader).items()}
    gateway_args = build_parser().parse_args(_container(GATEWAY, "gateway")["args"])
    assert env["SWITCHYARD_CONFIG"] == gateway_args.config
    assert _mounted_file(GATEWAY, "reloader", gateway_args.config) == (
        "switchyard-config",
        "config.yaml",
    )
    url = urlsplit(env["SWITCHYARD_RELOAD_URL"] or "")
    assert (url.hostname, url.port) == ("127.0.0.1", config.server.port)
    assert url.path == "/v1/switchyard/admin/reload"
    python, script = reloader["command"]
    assert python == "python"
    assert _mounted_file(GATEWAY, "reloader", script) == (
        "switchyard-reloader",
        "reload_on_change.py",
    )


def test_the_drain_fits_in_the_grace_period(config: Config) -> None:
    pod = _pod(GATEWAY)
    sleep, seconds = _container(GATEWAY, "gateway")["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep == "sleep" and int(seconds) >= 5  # endpoint removal reaches kube-proxy
    grace = pod["terminationGracePeriodSeconds"]
    assert grace >= int(seconds) + config.server.shutdown_drain_s + UVICORN_MARGIN_S
    assert GATEWAY["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_hpa_scales_the_gateway_on_a_metric_it_exports() -> None:
    hpa = _one("HorizontalPodAutoscaler")["spec"]
    target = hpa["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        "apps/v1",
        "Deployment",
        GATEWAY["metadata"]["name"],
    )
    assert "replicas" not in GATEWAY["spec"]  # the HPA owns it; `kubectl apply` never resets it
    assert hpa["minReplicas"] >= 2
    metrics = {m["type"]: m for m in hpa["metrics"]}
    name = metrics["Pods"]["pods"]["metric"]["name"]
    gauges = {f.name for f in GatewayMetrics().registry.collect() if f.type == "gauge"}
    assert name in gauges
    assert metrics["ContainerResource"]["containerResource"]["container"] == "gateway"
    # The adapter's rule serves that very name, summed per pod.
    (adapter,) = _documents(K8S / "examples" / "prometheus-adapter.yaml")
    (rule,) = yaml.safe_load(adapter["data"]["config.yaml"])["rules"]
    assert rule["seriesQuery"].startswith(name + "{")
    assert rule["name"]["as"] == name
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
    assert rule["metricsQuery"].startswith("sum(") and "by (<<.GroupBy>>)" in rule["metricsQuery"]


def test_the_pdb_selects_the_gateway_pods_only() -> None:
    pdb = _one("PodDisruptionBudget")["spec"]
    selector = pdb["selector"]["matchLabels"]
    assert {name for name, w in WORKLOADS.items() if _selects(selector, w)} == {"gateway"}
    assert pdb["maxUnavailable"] < _one("HorizontalPodAutoscaler")["spec"]["minReplicas"]


def _arg(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_the_backends_are_the_engine_pods_discovered_from_the_headless_service(
    config: Config,
) -> None:
    service = _one("Service", "vllm")["spec"]
    assert service["clusterIP"] == "None"
    assert not service.get("publishNotReadyAddresses"), "only ready pods get traffic"
    assert _selects(service["selector"], ENGINE)
    assert ENGINE["spec"]["serviceName"] == "vllm"
    assert ENGINE["spec"]["selector"]["matchLabels"] == service["selector"]
    engine = _container(ENGINE, "vllm")
    (port,) = service["ports"]
    (backend,) = config.backends  # one entry: a backend per engine pod, discovered
    assert backend.discover is not None
    namespace = _kustomization()["namespace"]
    assert backend.discover.dns == f"vllm.{namespace}.svc.cluster.local"
    assert backend.discover.record in ("A", "A+AAAA")
    assert backend.discover.max_backends >= ENGINE["spec"]["replicas"]
    made = expansion(backend, Address("10.0.0.7"))  # what one pod's address becomes
    url = urlsplit(made.base_url or "")
    assert (url.port, url.path) == (port["port"], "/v1")
    assert _port(engine, port["targetPort"]) == port["port"] == int(_arg(engine["args"], "--port"))
    assert backend.kind == "vllm"
    assert _arg(engine["args"], "--served-model-name") in backend.models
    assert backend.max_concurrency == int(_arg(engine["args"], "--max-num-seqs"))
    assert [route.backend_names for route in config.routes] == [("vllm",)]


def test_every_shared_state_uses_the_redis_service(config: Config) -> None:
    assert (config.state.backend, config.limits.backend, config.budgets.backend) == (
        "redis",
        "redis",
        "redis",
    )
    service = _one("Service", "redis")["spec"]
    assert _selects(service["selector"], REDIS)
    (port,) = service["ports"]
    assert _port(_container(REDIS, "redis"), port["targetPort"]) == port["port"]
    for section in ("state", "limits", "budgets"):
        url = urlsplit(config.redis_for(section).url)
        assert (url.hostname, url.port) == ("redis", port["port"])


@pytest.mark.parametrize("name", WORKLOADS)
def test_pods_run_unprivileged_with_bounded_resources(name: str) -> None:
    pod = _pod(WORKLOADS[name])
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        resources = container["resources"]
        assert {"cpu", "memory"} <= resources["requests"].keys()
        assert "memory" in resources["limits"]
    labels = _one("Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def _selected(labels: Mapping[str, str]) -> str:
    """The one workload whose pods carry `labels`, else the labels' k8s-app (kube-dns)."""
    found = [name for name, workload in WORKLOADS.items() if _selects(labels, workload)]
    return found[0] if len(found) == 1 else labels["k8s-app"]


def test_network_policies_let_the_gateway_reach_its_backends_only() -> None:
    policies = [p["spec"] for p in _manifests() if p["kind"] == "NetworkPolicy"]
    ports = {
        "engine": {_port(_container(ENGINE, "vllm"), "http")},
        "redis": {_port(_container(REDIS, "redis"), "redis")},
    }
    reached, accepting = {}, {}
    for policy in policies:
        selected = _selected(policy["podSelector"]["matchLabels"])
        for rule in policy.get("egress", []):
            assert selected == "gateway" and policy["policyTypes"] == ["Egress"]
            for peer in rule["to"]:
                reached[_selected(peer["podSelector"]["matchLabels"])] = {
                    p["port"] for p in rule["ports"]
                }
        for rule in policy.get("ingress", []):
            assert policy["policyTypes"] == ["Ingress"]
            (peer,) = rule["from"]  # from the gateway's pods only
            assert _selected(peer["podSelector"]["matchLabels"]) == "gateway"
            accepting[selected] = {p["port"] for p in rule["ports"]}
    assert reached == {**ports, "kube-dns": {53}}
    assert accepting == ports
