"""The built-in dashboard: static pages served by the gateway and the data they poll."""
