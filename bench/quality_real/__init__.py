"""`switchyard bench quality-real`: the quality probes calibrated on real llama.cpp replicas.

The gateway's own prober, canary baselines and quality book probe pairs of real replicas
of one GGUF: identical twins, and a healthy replica beside one degraded the ways providers
degrade a model (a quantised KV cache, the wrong chat template, a cut context). The
result is the canary's drift distribution per case and the margin between them, from
which a user sets `quality.probes.drift_threshold` for their own model.
"""
