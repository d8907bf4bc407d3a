"""Config validation: every problem names its YAML path; the shipped configs load and build."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gateway.cli import embedded_config_path
from gateway.config.root import Config, load_config, parse_config
from gateway.config.routes import fallback_chain
from gateway.errors import ConfigError
from gateway.process.service import start_gateway
from policies.base import PolicyParams, Role, Score
from policies.profiles import build_pipelines
from policies.registry import PolicyConfigError
from policies.snapshot import BackendView, Snapshot
from tests.conftest import StartEmulator, StartGateway, make_config

REPO = Path(__file__).resolve().parents[3]
DEPLOYMENT = REPO / "examples" / "deployment.yaml"

Edit = Callable[[dict[str, Any]], Any]


def base() -> dict[str, Any]:
    return make_config({"a": "http://127.0.0.1:9/v1", "b": "http://127.0.0.1:10/v1"})


def emulated(**options: Any) -> Edit:
    def edit(c: dict[str, Any]) -> None:
        c["backends"][0].update(kind="emulated", base_url=None, emulator=options)
        del c["backends"][0]["base_url"]

    return edit


def policies(*declared: dict[str, Any]) -> Edit:
    return lambda c: c.update(policies=list(declared))


def plugins(c: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = c["profiles"][0]["plugins"]
    return found


def referenced(c: dict[str, Any], policy: dict[str, Any]) -> None:
    """Declare `policy` and use it in the profile."""
    c["policies"] = [policy]
    plugins(c).insert(1, {"ref": policy["name"]})


def problems_of(config: dict[str, Any]) -> list[str]:
    """What `switchyard check` would report: the file's problems, else the policies'."""
    try:
        parsed = parse_config(config)
    except ConfigError as exc:
        return exc.problems
    try:
        build_pipelines(parsed.policies, parsed.profiles)
    except PolicyConfigError as exc:
        return exc.problems
    return []


# (edit applied to a valid config, the problems reported)
CASES: list[tuple[str, Edit, list[str]]] = [
    # -- top level and sections
    ("root-extra", lambda c: c.update(colour="blue"), ["colour: Extra inputs are not permitted"]),
    (
        "root-typo",
        lambda c: c.update(sever={}),
        ["sever: Extra inputs are not permitted; did you mean `server`?"],
    ),
    (
        "nested-typo",
        lambda c: c.update(server={"clients": {"header_timout_s": 3}}),
        [
            "server.clients.header_timout_s: Extra inputs are not permitted; "
            "did you mean `header_timeout_s`?"
        ],
    ),
    (
        "backend-typo",
        lambda c: c["backends"][0].update(cache={"capacity_tokn": 3}),
        [
            "backends.0.cache.capacity_tokn: Extra inputs are not permitted; "
            "did you mean `capacity_tokens`?"
        ],
    ),
    (
        "policy-param-typo",
        policies({"type": "kv-cost-scorer", "name": "kv", "params": {"work_weigth": 1}}),
        [
            "policies.0.params.work_weigth: Extra inputs are not permitted; "
            "did you mean `work_weight`?"
        ],
    ),
    ("no-backends", lambda c: c.pop("backends"), ["backends: Field required"]),
    (
        "no-profiles",
        lambda c: c.update(profiles=[]),
        ["profiles: List should have at least 1 item after validation, not 0"],
    ),
    (
        "server-extra",
        lambda c: c.update(server={"api_key": "x"}),
        ["server.api_key: Extra inputs are not permitted; did you mean `api_keys_env`?"],
    ),
    (
        "server-port",
        lambda c: c.update(server={"port": 70000}),
        ["server.port: Input should be less than or equal to 65535"],
    ),
    (
        "server-body-limit",
        lambda c: c.update(server={"max_body_bytes": 10}),
        ["server.max_body_bytes: Input should be greater than or equal to 1024"],
    ),
    (
        "server-clients",
        lambda c: c.update(server={"clients": {"header_timeout_s": 0, "max_connections": 0}}),
        [
            "server.clients.header_timeout_s: Input should be greater than 0",
            "server.clients.max_connections: Input should be greater than or equal to 1",
        ],
    ),
    (
        "timeouts",
        lambda c: c.update(timeouts={"total_s": -1}),
        ["timeouts.total_s: Input should be greater than 0"],
    ),
    (
        "retry-attempts",
        lambda c: c.update(retry={"max_attempts": 0}),
        ["retry.max_attempts: Input should be greater than or equal to 1"],
    ),
    (
        "retry-after",
        lambda c: c.update(retry={"max_retry_after_s": -0.5}),
        ["retry.max_retry_after_s: Input should be greater than or equal to 0"],
    ),
    (
        "health",
        lambda c: c.update(health={"consecutive_failures": 0}),
        ["health.consecutive_failures: Input should be greater than or equal to 1"],
    ),
    # -- backends
    (
        "backend-name",
        lambda c: c["backends"][0].update(name="a b"),
        ["backends.0.name: String should match pattern '^[A-Za-z0-9_.:-]+$'"],
    ),
    (
        "backend-duplicate",
        lambda c: c["backends"][1].update(name="a"),
        ["backends.1.name: duplicate name 'a'", "routes.0.backends.1: unknown backend 'b'"],
    ),
    (
        "backend-kind",
        lambda c: c["backends"][1].update(kind="tpu"),
        [
            "backends.1.kind: Input should be 'openai-compatible', 'vllm', 'sglang', "
            "'llama-cpp', 'ollama', 'openai', 'emulated', 'anthropic', 'gemini' or 'azure-openai'"
        ],
    ),
    (
        "backend-no-url",
        lambda c: c["backends"][0].pop("base_url"),
        ["backends.0.base_url: required for kind openai-compatible unless a preset gives it"],
    ),
    (
        "backend-url-scheme",
        lambda c: c["backends"][0].update(base_url="ftp://host/v1"),
        ["backends.0.base_url: String should match pattern '^https?://'"],
    ),
    (
        "backend-no-models",
        lambda c: c["backends"][0].update(models=[]),
        ["backends.0.models: List should have at least 1 item after validation, not 0"],
    ),
    (
        "backend-timeouts",
        lambda c: c["backends"][1].update(timeouts={"connect_s": 0}),
        ["backends.1.timeouts.connect_s: Input should be greater than 0"],
    ),
    (
        "backend-concurrency",
        lambda c: c["backends"][0].update(max_concurrency=0),
        ["backends.0.max_concurrency: Input should be greater than or equal to 1"],
    ),
    (
        "emulated-with-url",
        lambda c: c["backends"][0].update(kind="emulated"),
        ["backends.0.base_url: an emulated backend is started on a free port"],
    ),
    (
        "emulator-options-elsewhere",
        lambda c: c["backends"][0].update(emulator={"token_delay_ms": 1}),
        [
            "backends.0.emulator: only for kinds emulated, anthropic and gemini, "
            "not openai-compatible"
        ],
    ),
    (
        "emulated-cloud-with-url",
        lambda c: c["backends"][0].update(kind="anthropic", emulator={}),
        ["backends.0.base_url: an emulated backend is started on a free port"],
    ),
    (
        "emulator-negative",
        emulated(token_delay_ms=-1),
        ["backends.0.emulator.token_delay_ms: Input should be greater than or equal to 0"],
    ),
    (
        "emulator-extra",
        emulated(speed=2),
        ["backends.0.emulator.speed: Extra inputs are not permitted"],
    ),
    # -- routes
    (
        "route-unknown-backend",
        lambda c: c["routes"][0]["backends"].append("ghost"),
        ["routes.0.backends.2: unknown backend 'ghost'"],
    ),
    (
        "route-wrong-model",
        lambda c: c["routes"][0].update(model="other-model"),
        [
            "routes.0.backends.0: backend 'a' does not serve model 'other-model'",
            "routes.0.backends.1: backend 'b' does not serve model 'other-model'",
        ],
    ),
    (
        "route-member-unknown-backend",
        lambda c: c["routes"][0]["backends"].append({"backend": "ghost", "model": "x"}),
        ["routes.0.backends.2.backend: unknown backend 'ghost'"],
    ),
    (
        "route-member-wrong-model",
        lambda c: c["routes"][0]["backends"].__setitem__(1, {"backend": "b", "model": "other"}),
        ["routes.0.backends.1.model: backend 'b' does not serve model 'other'"],
    ),
    (
        "route-member-default-model",
        lambda c: c["routes"][0].update(model="other", backends=["a", {"backend": "b"}]),
        [
            "routes.0.backends.0: backend 'a' does not serve model 'other'",
            "routes.0.backends.1: backend 'b' does not serve model 'other'",
        ],
    ),
    (
        "route-member-twice",
        lambda c: c["routes"][0]["backends"].append({"backend": "a"}),
        ["routes.0.backends.2: backend 'a' appears twice in this route"],
    ),
    (
        "route-member-extra",
        lambda c: c["routes"][0]["backends"].__setitem__(0, {"backend": "a", "modle": "x"}),
        ["routes.0.backends.0.modle: Extra inputs are not permitted; did you mean `model`?"],
    ),
    (
        "route-member-no-backend",
        lambda c: c["routes"][0]["backends"].__setitem__(0, {"model": "emulated-model"}),
        ["routes.0.backends.0.backend: Field required"],
    ),
    (
        "route-member-shape",
        lambda c: c["routes"][0]["backends"].__setitem__(0, 7),
        ["routes.0.backends.0: Input should be a backend name or a mapping with `backend`"],
    ),
    (
        "route-member-window",
        lambda c: c["routes"][0]["backends"].__setitem__(
            0, {"backend": "a", "context_window_tokens": 0}
        ),
        ["routes.0.backends.0.context_window_tokens: Input should be greater than or equal to 1"],
    ),
    (
        "backend-window",
        lambda c: c["backends"][0].update(context_window_tokens=-5),
        ["backends.0.context_window_tokens: Input should be greater than or equal to 1"],
    ),
    (
        "fallback-unknown",
        lambda c: c["routes"][0].update(fallbacks=["nowhere"]),
        ["routes.0.fallbacks.0: unknown route 'nowhere'"],
    ),
    (
        "fallback-to-itself",
        lambda c: c["routes"][0].update(fallbacks=["default"]),
        ["routes.0.fallbacks.0: fallback cycle default → default"],
    ),
    (
        "fallback-cycle",
        lambda c: c["routes"].extend(
            [
                {"name": "x", "model": "emulated-model", "backends": ["a"], "fallbacks": ["y"]},
                {"name": "y", "model": "emulated-model", "backends": ["b"], "fallbacks": ["z"]},
                {"name": "z", "model": "emulated-model", "backends": ["b"], "fallbacks": ["x"]},
            ]
        ),
        ["routes.3.fallbacks.0: fallback cycle x → y → z → x"],
    ),
    (
        "route-unknown-profile",
        lambda c: c["routes"][0].update(profile="fast"),
        ["routes.0.profile: unknown profile 'fast'"],
    ),
    (
        "route-duplicate",
        lambda c: c["routes"].append(dict(c["routes"][0])),
        ["routes.1.name: duplicate name 'default'"],
    ),
    (
        "route-no-backends",
        lambda c: c["routes"][0].update(backends=[]),
        ["routes.0.backends: List should have at least 1 item after validation, not 0"],
    ),
    # -- policies
    (
        "policy-duplicate",
        policies({"type": "random-scorer", "name": "x"}, {"type": "least-load", "name": "x"}),
        ["policies.1.name: duplicate name 'x'"],
    ),
    (
        "policy-bad-param",
        policies({"type": "weighted-random-picker", "name": "w", "params": {"temperature": 0}}),
        ["policies.0.params.temperature: Input should be greater than 0"],
    ),
    (
        "policy-param-range",
        policies({"type": "session-affinity-scorer", "name": "s", "params": {"decay": 1}}),
        ["policies.0.params.decay: Input should be less than 1"],
    ),
    (
        "policy-param-type",
        policies({"type": "least-load-scorer", "name": "l", "params": {"relative": "maybe"}}),
        ["policies.0.params.relative: Input should be a valid boolean, unable to interpret input"],
    ),
    (
        "policy-unknown-param",
        policies({"type": "max-score-picker", "name": "m", "params": {"greedy": True}}),
        ["policies.0.params.greedy: Extra inputs are not permitted"],
    ),
    (
        "policy-import",
        policies({"type": "no_such_package.module:Scorer", "name": "u"}),
        [
            "policies.0.type: cannot import 'no_such_package.module': "
            "No module named 'no_such_package'"
        ],
    ),
    (
        "policy-missing-class",
        policies({"type": "policies.scorers.random_scorer:Nothing", "name": "u"}),
        ["policies.0.type: module 'policies.scorers.random_scorer' has no attribute 'Nothing'"],
    ),
    (
        "policy-not-a-policy",
        policies({"type": "policies.base:Score", "name": "u"}),
        ["policies.0.type: 'policies.base:Score' has no role (one of filter, scorer, picker)"],
    ),
    # -- profiles
    (
        "plugin-unknown-ref",
        lambda c: plugins(c).insert(2, {"ref": "nowhere"}),
        ["profiles.0.plugins.2.ref: unknown policy 'nowhere'"],
    ),
    (
        "plugin-extra",
        lambda c: plugins(c)[0].update(wieght=2),
        ["profiles.0.plugins.0.wieght: Extra inputs are not permitted; did you mean `weight`?"],
    ),
    (
        "plugin-negative-weight",
        lambda c: plugins(c)[1].update(weight=-1),
        ["profiles.0.plugins.1.weight: Input should be greater than or equal to 0"],
    ),
    (
        "plugin-weight-on-filter",
        lambda c: plugins(c)[0].update(weight=2),
        ["profiles.0.plugins.0.weight: only scorers take a weight; 'healthy-filter' is a filter"],
    ),
    (
        "plugin-twice",
        lambda c: plugins(c).insert(1, {"ref": "healthy-filter"}),
        ["profiles.0.plugins.1.ref: 'healthy-filter' appears twice"],
    ),
    (
        "picker-not-last",
        lambda c: plugins(c).insert(0, {"ref": "weighted-random-picker"}),
        [
            "profiles.0.plugins.0.ref: picker 'weighted-random-picker' must be the last plugin",
            "profiles.0.plugins.3.ref: a profile has one picker; "
            "'max-score-picker' comes after 'weighted-random-picker'",
        ],
    ),
    (
        "two-pickers",
        lambda c: plugins(c).append({"ref": "weighted-random-picker"}),
        [
            "profiles.0.plugins.2.ref: picker 'max-score-picker' must be the last plugin",
            "profiles.0.plugins.3.ref: a profile has one picker; "
            "'weighted-random-picker' comes after 'max-score-picker'",
        ],
    ),
    (
        "broken-policy-reported-once",
        lambda c: referenced(c, {"type": "random-scorer", "name": "r", "params": {"x": 1}}),
        ["policies.0.params.x: Extra inputs are not permitted"],
    ),
    (
        "profile-duplicate",
        lambda c: c["profiles"].append(copy.deepcopy(c["profiles"][0])),
        ["profiles.1.name: duplicate name 'balanced'"],
    ),
    (
        "profile-empty",
        lambda c: c["profiles"][0].update(plugins=[]),
        ["profiles.0.plugins: List should have at least 1 item after validation, not 0"],
    ),
    (
        "demo-unknown-route",
        lambda c: c.update(demo={"routes": ["nowhere"]}),
        ["demo.routes.0: unknown route 'nowhere'"],
    ),
]


@pytest.mark.parametrize(("edit", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_problem_names_its_yaml_path(edit: Edit, expected: list[str]) -> None:
    config = base()
    edit(config)
    assert problems_of(config) == expected


def test_a_plugin_twice_under_its_alias_is_reported() -> None:
    config = base()
    plugins(config).insert(1, {"ref": "healthy"})
    assert problems_of(config) == ["profiles.0.plugins.1.ref: 'healthy-filter' appears twice"]


def test_the_unedited_base_is_valid() -> None:
    assert problems_of(base()) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "(root): expected a mapping"),
        ("- a\n- b\n", "(root): expected a mapping"),
        ("backends: [\n", "(yaml): "),
    ],
    ids=["empty", "list", "bad-yaml"],
)
def test_unusable_files_are_reported(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.source == str(path)
    [problem] = caught.value.problems
    assert problem.startswith(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "backends:\n  - name: a\n    kind: openai\n   base_url: x\n",
            "4:4: expected <block end>, but found '<block mapping start>' "
            "(while parsing a block collection from line 2, column 3)",
        ),
        ("server:\n  port: 8080\n    host: x\n", "3:9: mapping values are not allowed here"),
    ],
    ids=["indent", "mapping-value"],
)
def test_a_yaml_error_names_the_file_line_and_column(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.problems == [f"(yaml): {path}:{expected}"]


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "absent.yaml")
    assert caught.value.problems == ["(file): No such file or directory"]


async def test_unset_client_keys_refuse_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWITCHYARD_TEST_UNSET_KEYS", raising=False)
    config = parse_config({**base(), "server": {"api_keys_env": "SWITCHYARD_TEST_UNSET_KEYS"}})
    with pytest.raises(ConfigError) as caught:
        await start_gateway(config)
    assert caught.value.problems == [
        "server.api_keys_env: SWITCHYARD_TEST_UNSET_KEYS is unset or empty"
    ]


def test_defaults_fill_every_optional_section() -> None:
    config = parse_config(base())
    assert config.server.host == "127.0.0.1" and config.server.port == 8080
    assert config.server.max_body_bytes == 8 * 1024 * 1024 and config.server.api_keys_env is None
    assert (config.timeouts.connect_s, config.timeouts.first_token_s) == (5.0, 60.0)
    assert (config.timeouts.between_chunks_s, config.timeouts.total_s) == (60.0, 600.0)
    assert (config.retry.max_attempts, config.retry.max_retry_after_s) == (3, 2.0)
    assert config.health.consecutive_failures == 3
    backend = config.backends[0]
    assert backend.kind == "openai-compatible" and backend.max_concurrency == 64
    assert config.routes[0].profile is None and config.profile_of(config.routes[0]) == "balanced"
    # A backend without its own timeouts uses the global ones.
    assert config.timeouts_for("a") is config.timeouts


def test_embedded_config_loads_and_builds() -> None:
    config = load_config(embedded_config_path())
    assert [b.kind for b in config.backends] == ["emulated"] * 3 + ["anthropic", "gemini"]
    assert all(b.base_url is None and b.emulator is not None for b in config.backends)
    assert [r.name for r in config.routes] == ["default", "least-load", "round-robin", "mixed"]
    locals_only = ["engine-a", "engine-b", "engine-c"]
    assert all(route.backends == locals_only for route in config.routes[:3])
    mixed = config.routes[3]
    assert [mixed.model_for(b) for b in (*locals_only, "cloud-anthropic", "cloud-gemini")] == [
        "switchyard-emulated"
    ] * 3 + ["claude-emulated", "gemini-emulated"]
    for cloud in config.backends[3:]:
        assert "cloud" in cloud.tags and cloud.pricing is not None
        assert cloud.pricing.cached_input_usd_per_mtok < cloud.pricing.input_usd_per_mtok
        assert cloud.cache.prefill_tokens_per_s < config.backends[0].cache.prefill_tokens_per_s
    assert all(b.emulator.cost_model == "batched" for b in config.backends if b.emulator)
    assert "cache-aware" in build_pipelines(config.policies, config.profiles)
    pipelines = build_pipelines(config.policies, config.profiles)
    balanced = pipelines["balanced"]
    assert [f.name for f in balanced.filters] == [
        "model-match-filter",
        "healthy-filter",
        "placement-filter",
        "context-window-filter",
        "quality-filter",
        "capacity-filter",
    ]
    assert [(s.scorer.name, s.weight) for s in balanced.scorers] == [
        ("quality-scorer", 1.0),
        ("load", 1.0),
        ("sticky", 0.5),
    ]
    assert balanced.picker.name == "max-score-picker"
    assert [s.scorer.name for s in pipelines["rotate"].scorers] == ["round-robin-scorer"]


def test_deployment_example_loads_and_builds() -> None:
    config = load_config(DEPLOYMENT)
    assert config.server.api_keys_env == "SWITCHYARD_CLIENT_KEYS"
    cloud = config.timeouts_for("cloud")
    assert (cloud.first_token_s, cloud.between_chunks_s) == (90, config.timeouts.between_chunks_s)
    assert config.timeouts_for("gpu-a") is config.timeouts
    assert config.backend("cloud").api_key_env == "CLOUD_API_KEY"
    pipelines = build_pipelines(config.policies, config.profiles)
    assert set(pipelines) == {"balanced", "exploring"}
    assert pipelines["exploring"].picker.name == "explore"
    own, pooled, _ = config.routes
    assert own.fallbacks == ["llama-3.1-8b-cloud"]
    assert pooled.model_for("cloud") == "llama-3.1-8b-instruct"
    assert pooled.model_for("gpu-a") == own.model
    assert config.backend("gpu-a").tags == ["local", "no-retention"]
    for profile in config.profiles:
        refs = [plugin.ref for plugin in profile.plugins]
        assert refs[refs.index("healthy-filter") + 1] == "placement-filter"


def test_route_members_resolve_their_model_and_window() -> None:
    config = base()
    config["routes"][0]["backends"] = [
        "a",
        {"backend": "b", "model": "b-name", "context_window_tokens": 4096},
    ]
    config["backends"][1]["models"] = ["b-name"]
    route = parse_config(config).routes[0]
    assert route.backends[0] == "a", "a plain name stays as written"
    assert [(m.backend, m.model, m.context_window_tokens) for m in route.members] == [
        ("a", "emulated-model", None),
        ("b", "b-name", 4096),
    ]
    assert route.backend_names == ("a", "b")
    assert dict(route.upstream_models) == {"a": "emulated-model", "b": "b-name"}


@pytest.mark.parametrize(
    ("fallbacks", "expected"),
    [
        ({}, ["r0"]),
        ({"r0": ["r1", "r2"]}, ["r0", "r1", "r2"]),
        # Depth first: a fallback's own fallbacks come before the next one.
        ({"r0": ["r1", "r3"], "r1": ["r2"]}, ["r0", "r1", "r2", "r3"]),
        # A route reached twice is tried once.
        ({"r0": ["r1", "r2"], "r1": ["r2"]}, ["r0", "r1", "r2"]),
    ],
    ids=["none", "in-order", "depth-first", "once"],
)
def test_fallback_chain_order(fallbacks: dict[str, list[str]], expected: list[str]) -> None:
    config = base()
    config["routes"] = [
        {"name": f"r{i}", "model": "emulated-model", "backends": ["a"], "fallbacks": []}
        for i in range(4)
    ]
    for name, targets in fallbacks.items():
        config["routes"][int(name[1:])]["fallbacks"] = targets
    routes = {route.name: route for route in parse_config(config).routes}
    assert list(fallback_chain(routes["r0"], routes)) == expected


def backend_timeouts(**overrides: float) -> dict[str, float]:
    return {"connect_s": 1, "first_token_s": 5, "between_chunks_s": 5, **overrides}


async def test_a_backends_own_first_token_s_applies(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    slow = await start_emulator(faults={"stall_before_first_byte_s": 2})
    config = make_config({"slow": slow.base_url})
    config["backends"][0]["timeouts"] = backend_timeouts(first_token_s=0.2)
    gw = await start_gateway(config)
    chat = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    response = await gw.client.post("/v1/chat/completions", json=chat)
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"


def test_total_s_is_per_request_not_per_backend() -> None:
    config = base()
    config["backends"][0]["timeouts"] = {"total_s": 5}
    assert problems_of(config) == ["backends.0.timeouts.total_s: Extra inputs are not permitted"]


def test_a_backends_unset_timeouts_inherit_the_top_level() -> None:
    config = base()
    config["timeouts"] = {"connect_s": 2, "between_chunks_s": 7}
    config["backends"][0]["timeouts"] = {"first_token_s": 3}
    parsed = parse_config(config)
    own = parsed.timeouts_for(parsed.backends[0].name)
    assert (own.connect_s, own.first_token_s, own.between_chunks_s) == (2, 3, 7)


class PreferNamedScorer:
    """A user policy, loaded by dotted path: 1.0 for the named backend, 0.0 for others."""

    role: ClassVar[Role] = "scorer"

    class Params(PolicyParams):
        backend: str

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        wanted = self.params.backend
        return {
            b.name: Score(1.0, "preferred") if b.name == wanted else Score(0.0, "not preferred")
            for b in candidates
        }


@pytest.mark.parametrize("separator", [":", "."])
def test_user_policy_by_dotted_path(separator: str) -> None:
    dotted = f"{__name__}{separator}PreferNamedScorer"
    config = base()
    config["policies"] = [{"type": dotted, "name": "prefer", "params": {"backend": "b"}}]
    plugins(config).insert(1, {"ref": "prefer", "weight": 2.0})
    parsed = parse_config(config)
    pipeline = build_pipelines(parsed.policies, parsed.profiles)["balanced"]
    [prefer, _] = pipeline.scorers
    assert isinstance(prefer.scorer, PreferNamedScorer) and prefer.weight == 2.0
    assert prefer.scorer.params.backend == "b"


def test_user_policy_params_are_validated() -> None:
    config = base()
    config["policies"] = [{"type": f"{__name__}:PreferNamedScorer", "name": "prefer"}]
    assert problems_of(config) == ["policies.0.params.backend: Field required"]


def test_config_is_frozen() -> None:
    config: Config = parse_config(base())
    with pytest.raises(ValueError):
        config.server.port = 1  # type: ignore[misc]


def test_each_problem_a_section_validator_finds_gets_its_own_path() -> None:
    data = {
        "backends": [{"name": "e", "base_url": "http://127.0.0.1:9/v1", "models": ["m"]}],
        "routes": [{"name": "r", "model": "m", "backends": ["e"]}],
        "profiles": [{"name": "balanced", "plugins": [{"ref": "max-score-picker"}]}],
        "flow_control": {
            "order": [{"type": "nope-order"}, {"type": "age", "params": {"horizon_s": -1}}]
        },
    }
    with pytest.raises(ConfigError) as failed:
        parse_config(data)
    problems = failed.value.problems
    assert problems[0].startswith("flow_control.order.0.type: unknown order policy 'nope-order'")
    assert problems[1].startswith("flow_control.order.1.params.horizon_s: ")
