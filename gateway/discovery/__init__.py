"""DNS discovery of backends: a `backends` entry naming a DNS name instead of one URL
becomes one backend per address that name has, followed as the answers change.

The `discover` block's schema (`config.py`), what an entry expands to and the config with
every entry expanded (`expand.py`, pure), the DNS lookups (`resolver.py`, dnspython,
loaded only by a config with a `discover` block), and the process-wide state and loop
that resolve each entry every `interval_s` and have the runtime apply a change the way a
reload does (`refresh.py`).

May import `gateway.config` (the schema it expands), `gateway.errors`, `providers`' presets
(an engine kind's usual port and path) and `gateway.process.tasks`; never the request
path, the HTTP edge or the process's top: the runtime is reached through the `Follower`
protocol.
"""
