"""Routing on price: each member's prices for the model asked of it reach the snapshot, and
the "cheapest meeting SLA and quality" profile picks the cheapest backend predicted to meet
the SLA, with the predicted cost in the decision's reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gateway.config.root import Config, load_config, parse_config
from gateway.errors import ConfigError
from gateway.fleet.state import FleetState
from gateway.routing.explain import explain_request
from gateway.routing.router import Leg, RequestTraits, Router
from policies.profiles import build_pipelines
from tests.conftest import StartEmulator, StartGateway, make_config
from tests.gateway.routing.test_fallback import decision_of
from tests.gateway.telemetry.test_metrics_endpoint import drained, samples, total

CHEAPEST = [
    {"ref": "healthy-filter"},
    {"ref": "quality-filter"},
    {"ref": "sla-filter"},
    {"ref": "cost-scorer"},
    {"ref": "max-score-picker"},
]
SYSTEM = "You are a careful assistant. " * 400


def config(**route: Any) -> Config:
    def cloud(name: str, **more: Any) -> dict[str, Any]:
        return {"name": name, "base_url": f"http://127.0.0.1:9/{name}/v1", **more}

    return parse_config(
        {
            "backends": [
                cloud(
                    "budget",
                    models=["small", "large"],
                    pricing={"input_usd_per_mtok": 0.5, "output_usd_per_mtok": 1.5},
                    # Its `large` costs more than the premium cloud's, uncached.
                    model_pricing={
                        "large": {"input_usd_per_mtok": 4.0, "output_usd_per_mtok": 16.0}
                    },
                    cache={"prefill_tokens_per_s": 2_000},  # slow: misses a tight TTFT
                ),
                cloud(
                    "premium",
                    models=["large"],
                    pricing={
                        "input_usd_per_mtok": 3.0,
                        "cached_input_usd_per_mtok": 0.3,
                        "output_usd_per_mtok": 15.0,
                    },
                ),
            ],
            "routes": [
                {
                    "name": "chat",
                    "model": "large",
                    "backends": ["premium", {"backend": "budget", "model": "small"}],
                    "profile": "cheapest",
                    **route,
                }
            ],
            "profiles": [{"name": "cheapest", "plugins": CHEAPEST}],
            "health": {"active_probes": False},
        }
    )


def decide(router: Router, question: str = "Hello?", **traits: Any) -> Leg:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    return router.plan(
        router.route("chat"),
        RequestTraits(
            endpoint="chat.completions", stream=False, max_tokens=100, messages=messages, **traits
        ),
    ).first


def router_for(cfg: Config) -> Router:
    return Router(
        cfg, FleetState(cfg.backends, cfg.health), build_pipelines(cfg.policies, cfg.profiles)
    )


def cost_reason(leg: Leg, backend: str) -> str:
    [report] = [c for c in leg.decision.candidates if c.backend == backend]
    return report.scores["cost-scorer"].reason


def test_each_member_is_priced_for_the_model_asked_of_it() -> None:
    leg = decide(router_for(config()))
    prompt = leg.work.prompt_tokens
    assert leg.decision.chosen == "budget"  # its `small`: $0.50/M, not its `large`'s $4/M
    assert cost_reason(leg, "budget").startswith("predicted $0.00")
    assert f"{prompt:,} prompt tokens at $0.50/M, 100 output at $1.50/M" in cost_reason(
        leg, "budget"
    )
    assert f"{prompt:,} prompt tokens at $3/M" in cost_reason(leg, "premium")


def test_a_backend_predicted_to_miss_the_sla_is_not_chosen_however_cheap() -> None:
    leg = decide(router_for(config(sla={"ttft_ms": 300})))
    assert leg.decision.chosen == "premium"
    [budget] = [c for c in leg.decision.candidates if c.backend == "budget"]
    assert budget.dropped_by == "sla-filter"
    assert "predicted $" in cost_reason(leg, "premium")


def test_a_predicted_cache_hit_is_priced_at_the_cached_rate() -> None:
    router = router_for(config(sla={"ttft_ms": 300}))
    first = decide(router)
    router.remember("premium", first.work)
    again = decide(router, "And now?")
    cached = again.work.cached_tokens["premium"]
    assert cached > 0
    prompt = again.work.prompt_tokens
    expected = f"{cached:,} of {prompt:,} prompt tokens cached at $0.30/M"
    assert expected in cost_reason(again, "premium")


def test_a_predicted_cache_write_is_priced_at_the_write_rate() -> None:
    """On an Anthropic backend the client's breakpoint writes the prompt up to it at the
    write price (1.25x input): the first request costs more there than on an OpenAI-format
    backend of the same list prices, the next one, reading it, less."""
    sonnet = {
        "input_usd_per_mtok": 3.0,
        "cached_input_usd_per_mtok": 0.3,
        "cache_write_usd_per_mtok": 3.75,
        "output_usd_per_mtok": 15.0,
    }
    cfg = parse_config(
        {
            "backends": [
                {
                    "name": "claude",
                    "kind": "anthropic",
                    "base_url": "http://127.0.0.1:9/v1",
                    "models": ["large"],
                    "pricing": sonnet,
                },
                {
                    "name": "openai",
                    "base_url": "http://127.0.0.1:9/openai/v1",
                    "models": ["large"],
                    "pricing": {k: v for k, v in sonnet.items() if k != "cache_write_usd_per_mtok"},
                    "cache": {"semantics": "engine", "capacity_tokens": 0},
                },
            ],
            "routes": [
                {
                    "name": "chat",
                    "model": "large",
                    "backends": ["claude", "openai"],
                    "profile": "cheapest",
                }
            ],
            "profiles": [{"name": "cheapest", "plugins": CHEAPEST}],
            "health": {"active_probes": False},
        }
    )
    router = router_for(cfg)
    marked = {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}

    def ask(question: str) -> Leg:
        messages = [
            {"role": "system", "content": [marked]},
            {"role": "user", "content": question},
        ]
        traits = RequestTraits(
            endpoint="chat.completions", stream=False, max_tokens=100, messages=messages
        )
        return router.plan(router.route("chat"), traits).first

    first = ask("Hello?")
    written = first.work.cache_writes()["claude"]
    assert written.tokens > 1_024 and written.ttl == "5m"
    prompt = first.work.prompt_tokens
    assert first.decision.chosen == "openai"
    assert (
        f"{written.tokens:,} of {prompt:,} prompt tokens written at $3.75/M, "
        f"{prompt - written.tokens:,} at $3/M"
    ) in cost_reason(first, "claude")
    router.remember("claude", first.work)
    again = ask("And now?")
    assert again.decision.chosen == "claude"
    assert "claude" not in again.work.cache_writes(), "the prefix is held: nothing written"
    assert "cached at $0.30/M" in cost_reason(again, "claude")
    assert "written" not in cost_reason(again, "claude")


def test_price_problems_name_their_yaml_path() -> None:
    raw = config().model_dump(mode="json", exclude_unset=True)
    raw["backends"][1]["model_pricing"] = {"small": {"input_usd_per_mtok": 1.0}}
    raw["backends"][0]["pricing"]["tiers"] = [
        {"above_prompt_tokens": 200_000},
        {"above_prompt_tokens": 128_000},
    ]
    with pytest.raises(ConfigError) as raised:
        parse_config(raw)
    assert raised.value.problems == [
        "backends.0.pricing.tiers.1.above_prompt_tokens: 128,000 must be above the previous "
        "tier's 200,000 (tiers ascend)",
        "backends.1.model_pricing.small: not one of this backend's models",
    ]


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cheapest.yaml"


@pytest.mark.parametrize(
    ("words", "chosen"),
    [
        pytest.param(50, "local-qwen", id="short-prompt-stays-local"),
        # Beyond the local window: the cheaper cloud for this prompt, Gemini.
        pytest.param(40_000, "gemini", id="long-prompt-cheapest-cloud"),
    ],
)
def test_the_cheapest_example_routes_on_predicted_cost(words: int, chosen: str) -> None:
    body = {
        "model": "assistant",
        "messages": [{"role": "user", "content": "word " * words}],
        "max_tokens": 200,
    }
    result = explain_request(
        load_config(EXAMPLE), orjson.dumps(body), endpoint="chat.completions", headers={}
    )
    assert result["chosen"] == chosen
    reasons = {
        c["backend"]: c["scores"]["cost"]["reason"]
        for c in result["candidates"]
        if c["dropped_by"] is None
    }
    assert chosen in reasons
    assert all(reason.startswith("predicted $") for reason in reasons.values())
    assert ", 200 output at $" in reasons[chosen]


async def test_a_served_request_shows_its_predicted_cost_and_is_charged_its_models_price(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    urls = {name: (await start_emulator()).base_url for name in ("cheap", "dear")}
    raw = make_config(urls, profile=CHEAPEST)
    prices = {"cheap": 1.0, "dear": 9.0}
    for backend in raw["backends"]:
        # The backend-wide price is never charged: the route's model has its own.
        backend["pricing"] = {"input_usd_per_mtok": 100.0}
        backend["model_pricing"] = {
            "emulated-model": {"input_usd_per_mtok": prices[backend["name"]]}
        }
    gw = await start_gateway(raw)
    body = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    response = await gw.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200 and response.headers["x-switchyard-backend"] == "cheap"
    decision = await decision_of(gw, response)
    reasons = {c["backend"]: c["scores"]["cost-scorer"]["reason"] for c in decision["candidates"]}
    assert "at $1/M" in reasons["cheap"] and "at $9/M" in reasons["dear"]
    prompt = response.json()["usage"]["prompt_tokens"]
    await drained(gw, 1)
    metrics = samples((await gw.client.get("/metrics")).text)
    charged = total(metrics, "switchyard_cost_usd_total", backend="cheap", model="emulated-model")
    assert charged == pytest.approx(prompt * 1.0 / 1e6)


def test_the_prices_example_of_the_docs_validates() -> None:
    page = (EXAMPLE.parents[1] / "docs" / "config.md").read_text(encoding="utf-8")
    section = page[page.index("### Prices") : page.index("### Backend metrics")]
    [block] = section.split("```yaml\n")[1:]
    backends = yaml.safe_load(block.split("```")[0])["backends"]
    cfg = parse_config(
        {
            "backends": backends,
            "routes": [{"name": "r", "model": "claude-haiku-4-5", "backends": ["claude"]}],
            "profiles": [{"name": "balanced", "plugins": CHEAPEST}],
        }
    )
    claude = cfg.backends[0]
    assert claude.pricing is not None and claude.pricing.rates(300_000).output == 22.5
    assert claude.model_pricing["claude-haiku-4-5"].input_usd_per_mtok == 1.0
