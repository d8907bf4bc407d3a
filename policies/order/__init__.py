"""Queue ordering: which held request an admission queue lets go next.

The same shape as routing, one level up: a request waiting in a route's queue is a
candidate, each order policy gives it a value in [0, 1] with a reason, the framework
(`policies.order.pipeline`) weights them within strict priority bands and bounds
starvation by ageing. Policies are pure functions of a `QueueSnapshot`.
"""
