# Switchyard gateway image. Build: `docker build -t switchyard .`
# Run:   docker run -p 127.0.0.1:8080:8080 \
#          -v "$PWD/deploy/switchyard/config.yaml:/etc/switchyard/config.yaml:ro" switchyard
# docker-compose.yml runs it with Redis, PostgreSQL, Prometheus and Grafana.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Install from a throw-away copy of the sources; only the installed package stays.
COPY . /tmp/switchyard-src
RUN pip install --no-cache-dir /tmp/switchyard-src \
    && rm -rf /tmp/switchyard-src \
    && useradd --system --uid 10001 --user-group --no-create-home switchyard \
    && mkdir -p /etc/switchyard

# Numeric, so that runtimes enforcing runAsNonRoot can verify it.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080

# No curl in the slim image. Follows the CMD's port: change both together.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]

# With --workers > 1, `switchyard serve` sets PROMETHEUS_MULTIPROC_DIR itself so that
# /metrics aggregates every worker.
ENTRYPOINT ["switchyard"]
CMD ["serve", "--config", "/etc/switchyard/config.yaml", "--host", "0.0.0.0", "--port", "8080", "--workers", "2"]
