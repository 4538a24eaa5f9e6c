#!/usr/bin/env python3
"""Every field a dashboard names exists, with the expected type, in a REAL engine.

Kibana and Grafana cannot run here, but the engine they would query can: this asks a running
Elasticsearch or OpenSearch for `_field_caps` (what Kibana's data views and Grafana's
Elasticsearch data source see) after records of every dataset were written into the data
streams, and checks every field that a Kibana data view, Lens panel, control, or Grafana
query, metric, bucket, variable or data source names:
  - the data view's / data source's index pattern matches some index,
  - the field exists there with one type (no conflict across the streams the pattern covers)
    whose kind is the one the panel expects (number, string, date, boolean),
  - in the stream of the panel's dataset, it has exactly the type es-templates/ maps it to,
  - it is aggregatable where the panel aggregates on it and searchable where a query uses it.

usage (one line, for a ctest on an engine fixture):
  check_field_caps.py --url http://127.0.0.1:PORT --source SRC --iosonar build/iosonar --ingest
    --ingest  first installs the templates with `iosonar es-setup --url URL` (--setup none skips
              that), then writes records of every dataset with `_bulk` (create, _id
              event.stream-event.seq, refresh): real ones, as iosonar writes them, from
              `simulate` (trace, client, oss, mds, jobstats), `probe` on a small temporary
              directory (probe, sampler), `health` and `slurm` on test/fixtures' captures (health,
              job), and phases, xlayer, compress2, summarize-job, scoreboard and lassi over a
              simulated store (their result streams); for the datasets nothing here produces
              without a cluster or a traced program (tracer, brw, result.anomaly, result.slowdown,
              result.bad_ost), one record made from the schema with every field of the dataset
              set. The output says which datasets were real and which were made.
  --namespace NS (default: a fresh one, iosonarcheck<pid>, so reruns do not collide)
  --user U with the password in $IOSONAR_ES_PASSWORD, --ca-file F, --insecure: as es-setup.
  --selftest  afterwards runs the check on mutated copies of dashboards/ and es-templates/ against
              the same engine and namespace and expects each to fail (a missing field, a wrong
              type, a pattern matching nothing, a field of another dataset, a template drift).
  --keep      leaves the ingested streams in the engine (by default they are deleted at the end).
Without --ingest it only checks what the engine already holds.
Prints what it checked and 'N passed, N failed'; exits 1 on any failure, naming each missing or
mistyped field and the panel that names it.
"""
import argparse
import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from checklib import ok, summary
import check_dashboards as cd

KIND = {"keyword": "string", "constant_keyword": "string", "text": "string", "match_only_text": "string",
        "wildcard": "string", "long": "number", "integer": "number", "short": "number", "byte": "number",
        "double": "number", "float": "number", "half_float": "number", "scaled_float": "number",
        "unsigned_long": "number", "date": "date", "date_nanos": "date", "boolean": "boolean"}


# ------------------------------------------------------------------------ HTTP
class Engine:
    def __init__(self, url, user=None, password=None, ca_file=None, insecure=False):
        self.url = url.rstrip("/")
        self.headers = {}
        if user:
            tok = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self.headers["Authorization"] = "Basic " + tok
        self.ctx = None
        if self.url.startswith("https"):
            self.ctx = ssl.create_default_context(cafile=ca_file)
            if insecure:
                self.ctx.check_hostname = False
                self.ctx.verify_mode = ssl.CERT_NONE

    def request(self, method, path, body=None, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        h = dict(self.headers)
        if data is not None:
            h["Content-Type"] = ctype
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=120) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, {"error": text.decode(errors="replace")}


# ---------------------------------------------------------------------- ingest
def synth_value(f, i):
    t = f["type"]
    if t == "long":
        return 1000 + i
    if t == "double":
        return 1.5 + i
    if t == "boolean":
        return True
    if t == "date":
        return "2026-01-01T00:00:00.000Z"
    return f"check-{f['name']}"


def synth_record(ds, fields, seq):
    """One record of dataset ds with every field of the dataset set, typed from the schema."""
    r = {}
    for name, f in fields.items():
        if f["datasets"] == "*" or ds in f["datasets"].split():
            r[name] = synth_value(f, seq)
    r["@timestamp"] = "2026-01-01T00:00:%02d.000Z" % (seq % 60)
    r["event.dataset"] = ds
    r["event.stream"] = 4242424242
    r["event.seq"] = seq
    return r


def real_records(iosonar, src, tmp):
    """Records iosonar itself writes, as JSON lines: the simulator's layers, the probe on a small
    temporary directory, the health and slurm exporters on the test fixtures' captures, and the
    analyses' result streams over the simulated store. Returns (records, what failed to run)."""
    out, failed = [], []
    fx = os.path.join(src, "test", "fixtures")
    store = os.path.join(tmp, "store")
    pdir = os.path.join(tmp, "probe")
    os.mkdir(pdir)
    span = ["--from", "2026-11-22T00:00:00Z", "--to", "2026-11-22T01:00:00Z"]
    runs = [  # (name, argv, output file or None when --output FILE is appended)
        ("simulate", ["simulate", "--output", "@", "--nodes", "4", "--fwd", "1", "--osts", "2", "--duration", "10"]),
        ("simulate --store", ["simulate", "--store", store, "--nodes", "4", "--fwd", "1", "--osts", "2",
                              "--duration", "30"]),
        ("probe --precreate", ["probe", "--precreate", "--dir", pdir, "--file-size", "4M", "--pool-size", "8",
                               "--allow-small-file"]),
        ("probe", ["probe", "--dir", pdir, "--output", "@", "--count", "1", "--interval", "1",
                   "--allow-small-file"]),
        ("health", ["health", "--lfs-df", os.path.join(fx, "health", "lfs-df.txt"),
                    "--lctl-dl-t", os.path.join(fx, "health", "lctl-dl-t.txt"), "--output", "@", "--count", "1"]),
        ("slurm", ["slurm", "--sacct-file", os.path.join(fx, "slurm", "sacct-parsable2.txt"), "--no-mysql",
                   "--since", "2000-01-01T00:00:00Z", "--output", "@", "--count", "1"]),
        ("phases", ["phases", "1000", "--store", store, "--output", "@"]),
        ("xlayer", ["xlayer", "1000", "--store", store, "--output", "@"]),
        ("compress2", ["compress2", "1000", "--store", store, "--output", "@"]),
        ("summarize-job", ["summarize-job", "1000", "--store", store, "--output", "@"]),
        ("scoreboard", ["scoreboard", "--store", store, "--output", "@"]),
        ("lassi", ["lassi", "--store", store, *span, "--window", "1m", "--results-output", "@"]),
    ]
    for i, (name, argv) in enumerate(runs):
        f = os.path.join(tmp, f"out{i}.jsonl")
        argv = [f if a == "@" else a for a in argv]
        r = subprocess.run([iosonar] + argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
        if r.returncode != 0:
            failed.append(f"{name} (rc {r.returncode}: {r.stderr.strip()[:200]})")
        if os.path.exists(f):
            out += [json.loads(line) for line in open(f) if line.strip()]
    return out, failed


def ingest(eng, a, fields, datasets, ns):
    if a.setup == "iosonar":
        cmd = [a.iosonar, "es-setup", "--url", a.url, "--wait", "60"]
        if a.user:
            cmd += ["--user", a.user]
        if a.ca_file:
            cmd += ["--ca-file", a.ca_file]
        if a.insecure:
            cmd += ["--insecure"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        ok(r.returncode == 0, f"iosonar es-setup --url {a.url} installs the templates (rc {r.returncode}):\n"
                              + "\n".join(r.stderr.strip().splitlines()[:8]))
    with tempfile.TemporaryDirectory() as tmp:
        recs, failed = real_records(a.iosonar, a.source, tmp)
    for f in failed:
        ok(False, f"iosonar {f}: its records are missing from the ingest")
    real = sorted({r["event.dataset"] for r in recs})
    made = []
    for i, ds in enumerate(sorted(datasets)):
        if ds not in real:
            recs.append(synth_record(ds, fields, i))
            made.append(ds)
    print(f"ingest: {len(recs)} records into namespace {ns}; real ({', '.join(real)}); "
          f"made from the schema ({', '.join(made)})")
    lines = []
    for r in recs:
        ds = r["event.dataset"]
        stream = f"{datasets[ds]['stream_type']}-{ds}-{ns}"
        lines.append(json.dumps({"create": {"_index": stream, "_id": f"{r['event.stream']}-{r['event.seq']}"}}))
        lines.append(json.dumps(r))
    status, resp = eng.request("POST", "/_bulk?refresh=true", "\n".join(lines) + "\n", "application/x-ndjson")
    if not ok(status == 200, f"_bulk answered {status}: {str(resp)[:300]}"):
        return
    bad = [it for it in resp.get("items", []) if list(it.values())[0].get("status") not in (200, 201)]
    for it in bad[:20]:
        v = list(it.values())[0]
        ok(False, f"_bulk: {v.get('_index')} rejected a record: {v.get('status')} {json.dumps(v.get('error'))[:300]}")
    ok(not bad, f"_bulk: every record of every dataset stored ({len(bad)} rejected)")
    for ds, d in datasets.items():
        status, resp = eng.request("GET", f"/{d['stream_type']}-{ds}-{ns}/_count")
        ok(status == 200 and resp.get("count", 0) > 0, f"stream {d['stream_type']}-{ds}-{ns} holds records ({status})")


# ---------------------------------------------------------------- the references
class Ref:
    def __init__(self, where, pattern, ds, field, kind=None, agg=False, search=False):
        self.where, self.pattern, self.ds, self.field = where, pattern, ds, field
        self.kind, self.agg, self.search = kind, agg, search


def dashboard_refs(src, datasets):
    refs = []
    objs = cd.load_ndjson(src)
    views = {o["id"]: o["attributes"]["title"] for _, o in objs if o["type"] == "index-pattern"}
    for w, o in objs:
        if o["type"] == "index-pattern":
            tf = o["attributes"].get("timeFieldName")
            if tf:
                refs.append(Ref(f"kibana {w} data view {o['attributes']['title']} time field", o["attributes"]["title"],
                                None, tf, "date", agg=True, search=True))
    for w, o in objs:
        if o["type"] != "dashboard":
            continue
        drefs = {r["name"]: r["id"] for r in o.get("references", [])}
        panels = json.loads(o["attributes"]["panelsJSON"])
        for p in panels:
            attrs = p["embeddableConfig"].get("attributes") or {}
            st = attrs.get("state") or {}
            q = (st.get("query") or {}).get("query", "")
            dss = cd.query_datasets(q)
            ds = dss[0] if len(dss) == 1 else None
            pw = f"kibana {w} panel '{p.get('title')}'"
            for lid, layer in (st.get("datasourceStates") or {}).get("formBased", {}).get("layers", {}).items():
                dv = drefs.get(f"{p['panelIndex']}:indexpattern-datasource-layer-{lid}")
                pat = views.get(dv)
                if pat is None:
                    ok(False, f"{pw}: layer {lid} has a data view ({dv})")
                    continue
                for f in cd.query_fields(q):
                    refs.append(Ref(pw + " query", pat, ds, f, search=True))
                for flt in st.get("filters", []):
                    k = flt.get("meta", {}).get("key")
                    if k:
                        refs.append(Ref(pw + " filter", pat, ds, k, search=True))
                for c in layer["columns"].values():
                    sf = c.get("sourceField")
                    cw = f"{pw} column '{c.get('label')}'"
                    if sf and sf != "___records":
                        kind = None if c["operationType"] in ("unique_count", "count") else c.get("dataType")
                        refs.append(Ref(cw, pat, ds, sf, kind, agg=True))
                    if c.get("filter"):
                        for f in cd.query_fields(c["filter"].get("query")):
                            refs.append(Ref(cw + " filter", pat, ds, f, search=True))
                    sort = (c.get("params") or {}).get("sortField")
                    if sort:
                        refs.append(Ref(cw + " sortField", pat, ds, sort, "date", agg=True))
        controls = json.loads((o["attributes"].get("controlGroupInput") or {}).get("panelsJSON", "{}"))
        for c in controls.values():
            e = c["explicitInput"]
            pat = views.get(e.get("dataViewId"))
            if pat:
                refs.append(Ref(f"kibana {w} control '{e.get('title')}'", pat, None, e.get("fieldName"), agg=True, search=True))
    # Grafana
    dss = cd.datasources(src)
    for uid, d in dss.items():
        if d["type"] == "elasticsearch":
            tf = d["jsonData"].get("timeField")
            if tf:
                refs.append(Ref(f"grafana data source {uid} timeField", d["jsonData"]["index"], None, tf, "date", agg=True))
    for name, dash in cd.grafana_dashboards(src):
        for p in cd.all_panels(dash.get("panels", [])):
            pds = cd.ds_of(p)
            for t in p.get("targets", []):
                sd = dss.get(cd.ds_of(t, pds).get("uid"))
                if not sd or sd["type"] != "elasticsearch":
                    continue
                idx = sd["jsonData"]["index"]
                tw = f"grafana {name} panel '{p.get('title')}' {t.get('refId')}"
                q = t.get("query", "")
                found = cd.query_datasets(q)
                ds = found[0] if len(found) == 1 else None
                for f in cd.query_fields(q):
                    refs.append(Ref(tw + " query", idx, ds, f, search=True))
                tf = t.get("timeField")
                if tf:
                    refs.append(Ref(tw + " timeField", idx, ds, tf, "date", agg=True))
                for m in t.get("metrics", []):
                    if m.get("field") and m["type"] not in ("count",):
                        kind = None if m["type"] == "cardinality" else ("number" if m["type"] not in ("min", "max") else None)
                        refs.append(Ref(f"{tw} {m['type']}", idx, ds, m["field"], kind, agg=True))
                for b in t.get("bucketAggs", []):
                    if b.get("field"):
                        kind = {"date_histogram": "date", "histogram": "number"}.get(b["type"])
                        refs.append(Ref(f"{tw} {b['type']}", idx, ds, b["field"], kind, agg=True))
        for v in dash.get("templating", {}).get("list", []):
            sd = dss.get(cd.ds_of(v).get("uid"))
            if v.get("type") != "query" or not sd or sd["type"] != "elasticsearch":
                continue
            q = json.loads(v["query"]) if isinstance(v["query"], str) else v["query"]
            found = cd.query_datasets(q.get("query", ""))
            ds = found[0] if len(found) == 1 else None
            if q.get("field"):
                refs.append(Ref(f"grafana {name} variable {v['name']}", sd["jsonData"]["index"], ds, q["field"], agg=True))
            for f in cd.query_fields(q.get("query", "")):
                refs.append(Ref(f"grafana {name} variable {v['name']} query", sd["jsonData"]["index"], ds, f, search=True))
    return [r for r in refs if r.field]


# ------------------------------------------------------------------------ check
def field_caps(eng, pattern, cache):
    if pattern not in cache:
        path = "/" + urllib.parse.quote(pattern, safe="*,") + "/_field_caps?fields=*&ignore_unavailable=true&allow_no_indices=true"
        status, resp = eng.request("GET", path)
        ok(status == 200, f"_field_caps on {pattern} answered {status}: {str(resp)[:200]}")
        cache[pattern] = resp if status == 200 else {"indices": [], "fields": {}}
        ok(len(cache[pattern].get("indices", [])) > 0, f"index pattern {pattern} matches some index in the engine")
    return cache[pattern]


def rescope(pattern, ns):
    """A dashboard pattern ending in -* or * restricted to namespace ns (so only this run's streams count)."""
    out = []
    for p in pattern.split(","):
        p = p.strip()
        out.append(p[:-1] + ns if p.endswith("-*") else p + "-" + ns if p.endswith("*") else p)
    return ",".join(out)


def check(eng, src, iosonar, ns):
    fields, datasets = cd.schema(iosonar)
    maps = cd.mappings(src, datasets)
    refs = dashboard_refs(src, datasets)
    ok(len(refs) > 20, f"found the dashboards' field references ({len(refs)})")
    cache = {}
    seen = set()
    for r in refs:
        key = (r.where, r.pattern, r.ds, r.field, r.kind, r.agg, r.search)
        if key in seen:
            continue
        seen.add(key)
        pat = rescope(r.pattern, ns) if ns else r.pattern
        caps = field_caps(eng, pat, cache)["fields"].get(r.field)
        if not ok(caps is not None, f"{r.where}: field {r.field} is MISSING from _field_caps of {pat}"):
            continue
        types = sorted(t for t in caps if t != "unmapped")
        if not ok(len(types) == 1, f"{r.where}: field {r.field} has conflicting types {types} across {pat} "
                                   f"(Kibana shows it as a conflict and cannot aggregate on it)"):
            continue
        t = types[0]
        c = caps[t]
        if r.kind:
            ok(KIND.get(t) == r.kind, f"{r.where}: field {r.field} is {t} in the engine, the panel expects a {r.kind}")
        if r.agg:
            ok(c.get("aggregatable"), f"{r.where}: field {r.field} ({t}) is not aggregatable in {pat}")
        if r.search:
            ok(c.get("searchable"), f"{r.where}: field {r.field} ({t}) is not searchable in {pat}")
        if r.ds and r.ds in datasets:
            stream = f"{datasets[r.ds]['stream_type']}-{r.ds}-{ns or '*'}"
            sc = field_caps(eng, stream, cache)["fields"].get(r.field)
            want = (maps.get(r.ds, {}).get(r.field) or {}).get("type")
            ok(sc is not None and want is not None and list(k for k in sc if k != "unmapped") == [want],
               f"{r.where}: field {r.field} in stream {stream} is {sorted(sc) if sc else 'MISSING'} in the engine, "
               f"es-templates/ maps it as {want or 'nothing (not in that dataset)'}")
    print(f"field caps: {len(seen)} references checked over {len(cache)} index patterns")


SELFTEST = [
    # (file, old, new, what the failure must mention): run on a copy, against the same engine
    ("dashboards/kibana/iosonar-job-io.ndjson", '\\"sourceField\\": \\"io.bytes\\"', '\\"sourceField\\": \\"io.bytez\\"',
     "field io.bytez is MISSING"),
    ("dashboards/kibana/iosonar-file-system.ndjson", '\\"sourceField\\": \\"health.used_pct\\"',
     '\\"sourceField\\": \\"health.target_min\\"', "the panel expects a number"),
    ("dashboards/kibana/iosonar-data-views.ndjson", '"timeFieldName":"@timestamp"', '"timeFieldName":"event.start_ns"',
     "the panel expects a date"),
    ("dashboards/kibana/iosonar-data-views.ndjson", '"title":"logs-iosonar.trace-*"', '"title":"logs-iosonar.traces-*"',
     "matches some index"),
    ("dashboards/grafana/dashboards/iosonar-file-system.json", '"field": "oss.write_bytes_per_s"', '"field": "mds.ops_per_s"',
     "es-templates/ maps it as nothing"),
    ("es-templates/component_template/metrics-iosonar.oss@mappings.json", '"type": "double"', '"type": "long"',
     "es-templates/ maps it as long"),
]


def selftest(a, ns):
    import shutil
    for f, old, new, expect in SELFTEST:
        with tempfile.TemporaryDirectory() as t:
            for d in ("dashboards", "es-templates"):
                shutil.copytree(os.path.join(a.source, d), os.path.join(t, d))
            p = os.path.join(t, f)
            text = open(p).read()
            if not ok(old in text, f"selftest: {f} contains {old!r} to mutate"):
                continue
            open(p, "w").write(text.replace(old, new, 1))
            cmd = [sys.executable, os.path.abspath(__file__), "--url", a.url, "--source", t, "--iosonar", a.iosonar,
                   "--namespace", ns]
            for opt, v in (("--user", a.user), ("--ca-file", a.ca_file)):
                if v:
                    cmd += [opt, v]
            if a.insecure:
                cmd.append("--insecure")
            r = subprocess.run(cmd, capture_output=True, text=True)
            ok(r.returncode == 1 and expect in r.stdout,
               f"selftest: fails on {f}: {old!r} -> {new!r} with '{expect}' (rc {r.returncode})\n{r.stdout[-800:]}")
            print(f"selftest: {f}: {old[:40]!r} -> {new[:40]!r}: rc {r.returncode}, "
                  + next((line[:200] for line in r.stdout.splitlines() if expect in line), "(expected message missing)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--source", required=True, help="the repository (dashboards/, es-templates/)")
    ap.add_argument("--iosonar", required=True, help="the iosonar binary (schema, es-setup, simulate, probe)")
    ap.add_argument("--ingest", action="store_true")
    ap.add_argument("--setup", choices=["iosonar", "none"], default="iosonar")
    ap.add_argument("--namespace")
    ap.add_argument("--user")
    ap.add_argument("--ca-file")
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--selftest", action="store_true", help="then check that mutated copies of the dashboards fail")
    ap.add_argument("--keep", action="store_true", help="keep the ingested namespace's streams (else deleted at the end)")
    a = ap.parse_args()
    eng = Engine(a.url, a.user, os.environ.get("IOSONAR_ES_PASSWORD"), a.ca_file, a.insecure)
    status, info = eng.request("GET", "/")
    if status == 200:
        v = info.get("version", {})
        print(f"engine: {v.get('distribution', 'elasticsearch')} {v.get('number')}")
    else:  # Elasticsearch's integ-test distribution has no handler for GET /
        status, info = eng.request("GET", "/_cluster/health")
        if not ok(status == 200, f"{a.url} answers GET /_cluster/health ({status})"):
            return summary()
        print(f"engine: cluster {info.get('cluster_name')} (GET / not served)")
    ns = a.namespace or (f"iosonarcheck{os.getpid()}" if a.ingest else None)
    if a.ingest:
        fields, datasets = cd.schema(a.iosonar)
        ingest(eng, a, fields, datasets, ns)
    check(eng, a.source, a.iosonar, ns)
    if a.selftest and ns:
        selftest(a, ns)
    if a.ingest and not a.keep:
        # The namespace's streams go (DELETE of a data stream also deletes its backing indices).
        status, resp = eng.request("DELETE", f"/_data_stream/*-{ns}")
        if status != 200:
            status, resp = eng.request("DELETE", f"/.ds-*-{ns}-*?expand_wildcards=all")
        print(f"cleanup: namespace {ns}: {status}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
