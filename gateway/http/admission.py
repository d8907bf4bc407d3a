"""What a client key allows a request, applied on the proxy path after the route is known:
the routes it may use (403 otherwise), the placement tags it requires (merged into the
request's `TagRequirement`), its and its route's budgets (429 `insufficient_quota`, or a
fallback route), and its RPM / TPM limits with its route's (429)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gateway.config.routes import fallback_chain
from gateway.errors import BudgetExhausted, Forbidden, RateLimited
from gateway.tenancy.budgets.spend_limits import REROUTED_HEADER, Budgets

if TYPE_CHECKING:
    from gateway.config.root import RouteConfig
    from gateway.routing.router import RequestTraits, Router
    from gateway.tenancy.caller import Caller
    from gateway.tenancy.limiter import RateLimiter
    from providers.errors import ApiError


def keyed_traits(caller: Caller | None, route: str, traits: RequestTraits) -> RequestTraits:
    """`traits` with the key's placement tags required; Forbidden when the key may not use
    `route`."""
    if caller is None:
        return traits
    if not caller.may_use(route):
        raise Forbidden(f"this key may not use the model '{route}'", param="model")
    if not caller.tags:
        return traits
    required = traits.required_tags.require(caller.tag_source, caller.tags)
    return replace(traits, required_tags=required)


async def budgeted_route(
    budgets: Budgets, router: Router, caller: Caller | None, route: RouteConfig
) -> tuple[RouteConfig, dict[str, str]]:
    """The route to take and the `x-switchyard-budget-*` headers: `route` while its and
    the key's budgets hold, else a fallback route whose own budget holds (when the spent
    budget says `fallback`); raises BudgetExhausted (429). Reads cached spend; a key's
    first request on this process may make one bounded Redis read."""
    check = await budgets.check(caller, route.name)
    if not check.exhausted:
        return route, check.headers()
    chain = fallback_chain(route, router.routes)[1:]
    taken = await budgets.reroute(check, caller, chain)
    return router.route(taken.route), {**taken.headers(), REROUTED_HEADER: route.name}


async def admit(
    limiter: RateLimiter,
    caller: Caller | None,
    route: str,
    prompt_tokens: int,
    max_tokens: int | None,
) -> dict[str, str]:
    """The `x-ratelimit-*` headers of the answer; raises RateLimited."""
    tokens = limiter.charge_tokens(prompt_tokens, max_tokens)
    return await limiter.admit(caller, route, tokens)


def rejection_headers(exc: ApiError) -> dict[str, str] | None:
    """Headers a refusal carries besides Retry-After: a 429's `x-ratelimit-*` or
    `x-switchyard-budget-*`."""
    return dict(exc.headers) if isinstance(exc, RateLimited | BudgetExhausted) else None
