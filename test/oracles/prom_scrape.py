#!/usr/bin/env python3
"""Scrapes a Prometheus endpoint and parses it with prometheus_client's own
parser (the reference implementation of the text format, not iosonar's
code): prints {"samples": {"name{k=v,...}": value}, "families": {name: type}}.
A body the parser rejects is an error (exit 1)."""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

url = sys.argv[1]
with urllib.request.urlopen(url, timeout=30) as r:
    ctype = r.headers.get("Content-Type", "")
    body = r.read().decode("utf-8")
samples, families = {}, {}
for fam in text_string_to_metric_families(body):
    families[fam.name] = fam.type
    for s in fam.samples:
        key = s.name + "{" + ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) + "}"
        if key in samples:
            print(f"duplicate sample {key}", file=sys.stderr)
            sys.exit(1)
        samples[key] = s.value
json.dump({"content_type": ctype, "samples": samples, "families": families, "bytes": len(body)}, sys.stdout)
