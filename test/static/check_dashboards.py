#!/usr/bin/env python3
"""Static checks of iosonar's Kibana and Grafana dashboards (Kibana and Grafana
cannot be installed on the development machines, so the dashboards are checked
as text against the schema, the Elasticsearch templates, the MySQL migrations,
the data views / data sources and docker-compose.yml).

usage: check_dashboards.py --source DIR --iosonar BIN CHECK
CHECK is one of:
  kibana     every dashboard in dashboards/kibana/*.ndjson: each Lens layer's data view exists
             (by reference), its query names one dataset whose data stream the data view covers,
             every field a column, query or control uses is mapped for that dataset by es-templates/
             with a type the operation accepts
  grafana-es every panel / target / variable on an Elasticsearch data source: the uid exists,
             the query names one dataset the data source's index covers, every metric, bucket and
             query field is mapped for that dataset with a compatible type
  grafana-sql every SQL of a MySQL panel or variable names only tables/views and columns that
             mysql-schema/*.sql creates; the data source uid exists and is MySQL
  grafana-provisioning the dashboards provider reads a path that docker-compose.yml mounts from
             dashboards/grafana/dashboards (which exists), every data source uid referenced exists
  generated  dashboards/gen_dashboards.py reproduces the committed dashboard files
  selftest   each check above fails on a mutated copy (wrong field, wrong type, wrong dataset,
             wrong data view / uid, wrong SQL column or table, wrong mount path)
Prints what it checked and 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from checklib import FAILS, PASSES, ok, summary  # noqa: F401 (FAILS/PASSES used by the selftest)


# ----------------------------------------------------------------------- inputs
def schema(iosonar):
    out = subprocess.run([iosonar, "schema", "--format", "json"], check=True, capture_output=True, text=True).stdout
    s = json.loads(out)
    return {f["name"]: f for f in s["fields"]}, {d["name"]: d for d in s["datasets"]}


def walk_props(props, prefix=""):
    for name, m in props.items():
        if "properties" in m:
            yield from walk_props(m["properties"], prefix + name + ".")
        else:
            yield prefix + name, m


def mappings(src, datasets):
    """dataset -> {field: mapping} from es-templates/component_template/<type>-<dataset>@mappings.json."""
    out = {}
    for ds, d in datasets.items():
        p = os.path.join(src, "es-templates", "component_template", f"{d['stream_type']}-{ds}@mappings.json")
        if os.path.exists(p):
            body = json.load(open(p))
            out[ds] = dict(walk_props(body["template"]["mappings"]["properties"]))
    return out


def pattern_rx(pat):
    return re.compile("^" + re.escape(pat).replace(r"\*", ".*") + "$")


def covers(pattern, ds, datasets):
    """Does an index pattern (comma-separated allowed) cover the dataset's data stream?"""
    stream = f"{datasets[ds]['stream_type']}-{ds}-default"
    return any(pattern_rx(p.strip()).match(stream) for p in pattern.split(","))


ES_KIND = {"keyword": "string", "long": "number", "double": "number", "boolean": "boolean", "date": "date"}
NUMERIC = {"long", "double"}


def strip_quoted(q):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', q)


def query_fields(q):
    """Field names of a KQL or Lucene query: the names before ':'."""
    return re.findall(r"([A-Za-z_@][\w.@]*)\s*:", strip_quoted(q or ""))


def query_datasets(q):
    return re.findall(r'event\.dataset\s*:\s*"([^"]+)"', q or "")


def check_field(where, field, ds, maps, fields, allowed=None, counter_ok=True):
    """field exists in the schema, is mapped for ds, and (if allowed) has one of those ES types."""
    if not ok(field in fields, f"{where}: field {field} exists in the schema"):
        return None
    m = maps.get(ds, {}).get(field)
    if not ok(m is not None, f"{where}: field {field} belongs to dataset {ds} (mapped in its template)"):
        return None
    if allowed is not None:
        ok(m["type"] in allowed, f"{where}: field {field} is mapped as {m['type']}, the operation needs {sorted(allowed)}")
    if not counter_ok:
        ok(m.get("time_series_metric") != "counter",
           f"{where}: field {field} is a time-series counter, which Lens/Elasticsearch only take as max/min/last/rate")
    ok(fields[field]["type"] == m["type"], f"{where}: {field} schema type {fields[field]['type']} = mapping {m['type']}")
    return m


def check_query(where, q, ds, maps, fields):
    for f in query_fields(q):
        if f == "event.dataset":
            continue
        check_field(where + " query", f, ds, maps, fields)


# ----------------------------------------------------------------------- kibana
LENS_OPS = {
    "date_histogram": ({"date"}, True),
    "terms": ({"keyword", "long", "double", "boolean"}, True),
    "sum": (NUMERIC, False), "average": (NUMERIC, False), "median": (NUMERIC, False),
    "percentile": (NUMERIC, False), "percentile_rank": (NUMERIC, False), "standard_deviation": (NUMERIC, False),
    "min": (NUMERIC | {"date"}, True), "max": (NUMERIC | {"date"}, True),
    "unique_count": (None, True), "last_value": (None, True), "count": (None, True),
    "counter_rate": (NUMERIC, True), "range": (NUMERIC, True),
}


def load_ndjson(src):
    objs = []
    d = os.path.join(src, "dashboards", "kibana")
    for name in sorted(os.listdir(d)):
        if name.endswith(".ndjson"):
            for i, line in enumerate(open(os.path.join(d, name)), 1):
                if line.strip():
                    objs.append((f"{name}:{i}", json.loads(line)))
    return objs


def check_kibana(src, fields, datasets, maps):
    objs = load_ndjson(src)
    views = {o["id"]: o["attributes"]["title"] for _, o in objs if o["type"] == "index-pattern"}
    ids = [(o["type"], o["id"]) for _, o in objs]
    ok(len(ids) == len(set(ids)), "kibana: saved object ids are unique")
    dashes = [(w, o) for w, o in objs if o["type"] == "dashboard"]
    ok(len(dashes) >= 2, "kibana: the job I/O and file system dashboards exist")
    titles = {o["attributes"]["title"] for _, o in dashes}
    ok({"iosonar \u2014 job I/O", "iosonar \u2014 file system"} <= titles, f"kibana: dashboard titles {sorted(titles)}")
    nlayers = 0
    for where, o in dashes:
        refs = {r["name"]: r for r in o.get("references", [])}
        for r in o.get("references", []):
            ok(r["type"] != "index-pattern" or r["id"] in views, f"{where}: reference {r['name']} -> data view {r['id']} exists")
        panels = json.loads(o["attributes"]["panelsJSON"])
        pids = [p["panelIndex"] for p in panels]
        ok(len(pids) == len(set(pids)), f"{where}: panel indexes unique")
        for p in panels:
            pw = f"{where} panel '{p.get('title')}'"
            g = p["gridData"]
            ok(g["x"] >= 0 and g["x"] + g["w"] <= 48 and g["i"] == p["panelIndex"], f"{pw}: grid within 48 columns")
            ok(p["type"] == "lens", f"{pw}: a Lens panel")
            attrs = p["embeddableConfig"].get("attributes")
            if not ok(attrs is not None, f"{pw}: Lens visualization embedded by value"):
                continue
            st = attrs["state"]
            q = st["query"]["query"]
            dss = query_datasets(q)
            if not ok(len(dss) == 1, f"{pw}: query names exactly one event.dataset (got {dss})"):
                continue
            ds = dss[0]
            if not ok(ds in datasets, f"{pw}: dataset {ds} is in the schema"):
                continue
            check_query(pw, q, ds, maps, fields)
            for flt in st.get("filters", []):
                for f in [flt.get("meta", {}).get("key")] + query_fields(json.dumps(flt.get("query", {}))):
                    if f:
                        check_field(pw + " filter", f, ds, maps, fields)
            layers = st["datasourceStates"]["formBased"]["layers"]
            own = {r["name"]: r["id"] for r in attrs.get("references", [])}
            colids = set()
            for lid, layer in layers.items():
                nlayers += 1
                name = f"indexpattern-datasource-layer-{lid}"
                r = refs.get(f"{p['panelIndex']}:{name}")
                if not ok(r is not None, f"{pw}: dashboard reference {p['panelIndex']}:{name}"):
                    continue
                ok(own.get(name, r["id"]) == r["id"], f"{pw}: embedded and dashboard references agree")
                dv = r["id"]
                if not ok(dv in views, f"{pw}: data view {dv} exists"):
                    continue
                ok(covers(views[dv], ds, datasets), f"{pw}: data view {views[dv]} covers dataset {ds}")
                cols = layer["columns"]
                ok(sorted(layer["columnOrder"]) == sorted(cols), f"{pw}: columnOrder lists the columns")
                colids |= set(cols)
                for cid, c in cols.items():
                    cw = f"{pw} column {c.get('label')}"
                    op = c["operationType"]
                    if not ok(op in LENS_OPS, f"{cw}: known Lens operation {op}"):
                        continue
                    allowed, counter_ok = LENS_OPS[op]
                    sf = c.get("sourceField")
                    if op == "count" and sf == "___records":
                        pass
                    elif ok(sf is not None, f"{cw}: has a sourceField"):
                        m = check_field(cw, sf, ds, maps, fields, allowed, counter_ok)
                        if m:
                            want = "number" if op in ("unique_count", "count") else ES_KIND[m["type"]]
                            ok(c["dataType"] == want, f"{cw}: dataType {c['dataType']} fits {sf} ({m['type']})")
                    fmt = ((c.get("params") or {}).get("format") or {})
                    if fmt and sf in fields and op not in ("count", "unique_count"):
                        unit = fields[sf]["unit"]
                        fid, suffix = fmt.get("id"), (fmt.get("params") or {}).get("suffix", "")
                        want = {"bytes": unit in ("bytes", "bytes/s") and (suffix == "/s") == (unit == "bytes/s"),
                                "duration": unit == "ns" and fmt.get("params", {}).get("fromUnit") == "nanoseconds",
                                "percent": unit == "1",
                                "number": (suffix == "%") == (unit == "percent")}.get(fid, True)
                        ok(want, f"{cw}: format {fid}{' ' + suffix if suffix else ''} fits {sf}'s unit '{unit}'")
                    if c.get("filter"):
                        check_query(cw + " filter", c["filter"].get("query"), ds, maps, fields)
                    sort = (c.get("params") or {}).get("sortField")
                    if sort:
                        check_field(cw + " sortField", sort, ds, maps, fields, {"date"})
                    ob = (c.get("params") or {}).get("orderBy") or {}
                    if ob.get("type") == "column":
                        ok(ob["columnId"] in cols, f"{cw}: orders by an existing column")
            vis = json.dumps(st["visualization"])
            used = set(re.findall(r'"(?:accessors|xAccessor|splitAccessor|metricAccessor|columnId)"\s*:\s*"([^"]+)"', vis))
            used |= {a for lst in re.findall(r'"accessors"\s*:\s*\[([^\]]*)\]', vis) for a in re.findall(r'"([^"]+)"', lst)}
            ok(used <= colids, f"{pw}: visualization uses only the layer's columns (unknown {sorted(used - colids)})")
        # Controls
        cg = o["attributes"].get("controlGroupInput") or {}
        controls = json.loads(cg.get("panelsJSON", "{}"))
        # A control's selection filters every panel that does not ignore global filters;
        # on a dataset without that field it would empty the panel.
        for p in panels:
            st = p["embeddableConfig"].get("attributes", {}).get("state", {})
            dss = query_datasets(st.get("query", {}).get("query"))
            for lid, layer in st.get("datasourceStates", {}).get("formBased", {}).get("layers", {}).items():
                if layer.get("ignoreGlobalFilters") or len(dss) != 1:
                    continue
                for c in controls.values():
                    f = c["explicitInput"].get("fieldName")
                    ok(f in maps.get(dss[0], {}),
                       f"{where} panel '{p.get('title')}': control field {f} is mapped in {dss[0]} "
                       f"(or the layer ignores global filters), so a selection does not empty the panel")
        for cid, c in controls.items():
            e = c["explicitInput"]
            cw = f"{where} control {e.get('title')}"
            dv = e.get("dataViewId")
            r = refs.get(f"controlGroup_{cid}:optionsListDataView")
            ok(r is not None and r["id"] == dv, f"{cw}: reference controlGroup_{cid}:optionsListDataView to {dv}")
            if not ok(dv in views, f"{cw}: data view {dv} exists"):
                continue
            f = e.get("fieldName")
            dss = [ds for ds in datasets if covers(views[dv], ds, datasets) and f in maps.get(ds, {})]
            ok(f in fields and dss, f"{cw}: field {f} is mapped in some dataset data view {views[dv]} covers")
            for ds in dss:
                ok(maps[ds][f]["type"] in {"keyword", "long", "double", "boolean"},
                   f"{cw}: options list on {f} ({maps[ds][f]['type']}) in {ds}")
    print(f"kibana: {len(dashes)} dashboards, {nlayers} Lens layers checked")


# ---------------------------------------------------------------------- grafana
def datasources(src):
    out = {}
    d = os.path.join(src, "dashboards", "grafana", "provisioning", "datasources")
    for name in sorted(os.listdir(d)):
        if name.endswith((".yml", ".yaml")):
            for ds in (yaml.safe_load(open(os.path.join(d, name))) or {}).get("datasources", []) or []:
                out[ds["uid"]] = ds
    return out


def grafana_dashboards(src):
    d = os.path.join(src, "dashboards", "grafana", "dashboards")
    return [(name, json.load(open(os.path.join(d, name)))) for name in sorted(os.listdir(d)) if name.endswith(".json")]


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))


def ds_of(obj, parent=None):
    d = obj.get("datasource") or parent
    if isinstance(d, str):
        return {"uid": d}
    return d or {}


def check_panel_ds(name, p, dss):
    """The panel's own data source exists, has the type it claims, and its targets use the same type."""
    pds = ds_of(p)
    if not pds or pds.get("uid") in ("-- Mixed --", "-- Dashboard --", "grafana") or p.get("type") == "row":
        return
    d = dss.get(pds.get("uid"))
    if ok(d is not None, f"{name} panel '{p.get('title')}': data source uid {pds.get('uid')} exists"):
        ok(pds.get("type", d["type"]) == d["type"], f"{name} panel '{p.get('title')}': data source type {d['type']}")
        for t in p.get("targets", []):
            td = dss.get(ds_of(t, pds).get("uid"))
            ok(td is None or td["type"] == d["type"], f"{name} panel '{p.get('title')}' {t.get('refId')}: same data source type as the panel")


GRAFANA_METRICS = {"avg": NUMERIC, "sum": NUMERIC, "min": NUMERIC | {"date"}, "max": NUMERIC | {"date"},
                   "percentiles": NUMERIC, "extended_stats": NUMERIC, "cardinality": None, "count": "none",
                   "rate": NUMERIC}
GRAFANA_BUCKETS = {"date_histogram": {"date"}, "terms": {"keyword", "long", "double", "boolean"},
                   "histogram": NUMERIC, "filters": "none"}


def check_grafana_es(src, fields, datasets, maps):
    dss = datasources(src)
    n = 0
    for name, dash in grafana_dashboards(src):
        for p in all_panels(dash.get("panels", [])):
            check_panel_ds(name, p, dss)
            pds = ds_of(p)
            for t in p.get("targets", []):
                tds = ds_of(t, pds)
                src_ds = dss.get(tds.get("uid"))
                if not ok(src_ds is not None, f"{name} panel '{p.get('title')}': data source uid {tds.get('uid')} exists"):
                    continue
                if src_ds["type"] != "elasticsearch":
                    continue
                n += 1
                tw = f"{name} panel '{p.get('title')}' {t.get('refId')}"
                ok(tds.get("type", "elasticsearch") == "elasticsearch", f"{tw}: data source type elasticsearch")
                index = src_ds["jsonData"]["index"]
                q = t.get("query", "")
                found = query_datasets(q)
                if not ok(len(found) == 1, f"{tw}: query names exactly one event.dataset (got {found})"):
                    continue
                ds = found[0]
                if not ok(ds in datasets and covers(index, ds, datasets),
                          f"{tw}: data source index {index} covers dataset {ds}"):
                    continue
                check_query(tw, q, ds, maps, fields)
                tf = t.get("timeField", src_ds["jsonData"].get("timeField"))
                check_field(tw + " timeField", tf, ds, maps, fields, {"date"})
                unit = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
                want_unit = {"Bps": "bytes/s", "bytes": "bytes", "ns": "ns", "µs": "us", "ms": "ms", "s": "s",
                             "percent": "percent", "percentunit": "1"}
                for m in t.get("metrics", []):
                    if unit in want_unit and m.get("field") in fields and m["type"] not in ("cardinality", "count"):
                        ok(fields[m["field"]]["unit"] == want_unit[unit],
                           f"{tw}: panel unit {unit} fits {m['field']}'s unit '{fields[m['field']]['unit']}'")
                    allowed = GRAFANA_METRICS.get(m["type"])
                    if not ok(m["type"] in GRAFANA_METRICS, f"{tw}: metric type {m['type']} known"):
                        continue
                    if allowed == "none":
                        continue
                    check_field(f"{tw} {m['type']}", m.get("field"), ds, maps, fields, allowed, False)
                for b in t.get("bucketAggs", []):
                    allowed = GRAFANA_BUCKETS.get(b["type"])
                    if not ok(b["type"] in GRAFANA_BUCKETS, f"{tw}: bucket type {b['type']} known"):
                        continue
                    if allowed != "none":
                        check_field(f"{tw} {b['type']}", b.get("field"), ds, maps, fields, allowed)
                    ob = (b.get("settings") or {}).get("orderBy")
                    if ob and ob not in ("_term", "_count", "_key"):
                        single = {m["id"] for m in t.get("metrics", []) if m["type"] not in ("percentiles", "extended_stats")}
                        ok(ob in single, f"{tw}: terms order by an existing single-value metric (Elasticsearch "
                                         f"refuses ordering by a multi-value one without a key)")
        for v in dash.get("templating", {}).get("list", []):
            vds = dss.get(ds_of(v).get("uid"))
            if v.get("type") != "query":
                continue
            if not ok(vds is not None, f"{name} variable {v['name']}: data source exists"):
                continue
            if vds["type"] != "elasticsearch":
                continue
            n += 1
            q = json.loads(v["query"]) if isinstance(v["query"], str) else v["query"]
            found = query_datasets(q.get("query", ""))
            if ok(len(found) == 1 and found[0] in datasets and covers(vds["jsonData"]["index"], found[0], datasets),
                  f"{name} variable {v['name']}: query names one dataset the data source covers"):
                check_field(f"{name} variable {v['name']}", q.get("field"), found[0], maps, fields,
                            {"keyword", "long", "boolean"})
                check_query(f"{name} variable {v['name']}", q.get("query"), found[0], maps, fields)
    ok(n > 0, "grafana-es: some Elasticsearch queries exist")
    print(f"grafana-es: {n} Elasticsearch queries checked")


# --------------------------------------------------------------------------- SQL
SQL_WORDS = set("""select distinct from where and or not in is null as on join left right inner outer cross
group by order asc desc limit offset having union all case when then else end between like interval
day hour minute second microsecond true false char signed unsigned with over partition exists
""".split())


def split_top(s, sep=","):
    out, depth, cur = [], 0, ""
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    out.append(cur)
    return out


def sql_clean(sql):
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    sql = re.sub(r"'(?:[^'\\]|\\.|'')*'", "''", sql)
    return sql


def sql_schema(src):
    """{table or view: set(columns)} from mysql-schema/*.sql (CREATE TABLE, ALTER TABLE ADD, CREATE VIEW)."""
    tables = {}
    d = os.path.join(src, "mysql-schema")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".sql"):
            continue
        text = sql_clean(open(os.path.join(d, name)).read())
        for stmt in text.split(";"):
            m = re.search(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?\s*\((.*)\)", stmt, re.S | re.I)
            if m:
                cols = set()
                for item in split_top(m.group(2)):
                    w = item.strip().split()
                    if w and w[0].upper() not in ("PRIMARY", "KEY", "UNIQUE", "INDEX", "CONSTRAINT", "FOREIGN", "FULLTEXT", "CHECK"):
                        cols.add(w[0].strip("`").lower())
                tables[m.group(1).lower()] = cols
                continue
            m = re.search(r"ALTER\s+TABLE\s+`?(\w+)`?(.*)", stmt, re.S | re.I)
            if m:
                for c in re.findall(r"ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", m.group(2), re.I):
                    if c.upper() not in ("KEY", "INDEX", "PRIMARY", "UNIQUE", "CONSTRAINT", "FOREIGN"):
                        tables.setdefault(m.group(1).lower(), set()).add(c.lower())
                continue
            m = re.search(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+`?(\w+)`?\s+AS\s+SELECT\s+(.*?)\s+FROM\s", stmt, re.S | re.I)
            if m:
                cols = set()
                for item in split_top(m.group(2)):
                    a = re.search(r"\bAS\s+`?(\w+)`?\s*$", item.strip(), re.I)
                    cols.add((a.group(1) if a else re.split(r"[.\s]", item.strip())[-1]).lower())
                tables[m.group(1).lower()] = cols
    return tables


def check_sql(where, sql, tables):
    s = sql_clean(sql)
    s = re.sub(r"\$\{[^}]*\}|\$__\w+|\$\w+", " ", s)  # Grafana macros and variables (macro arguments stay checked)
    refs = re.findall(r"\b(?:FROM|JOIN)\s+`?(\w+)`?(?:\s+(?:AS\s+)?(\w+))?", s, re.I)
    alias = {}
    for t, a in refs:
        t = t.lower()
        if not ok(t in tables, f"{where}: table {t} exists in mysql-schema/"):
            continue
        alias[t] = t
        if a and a.lower() not in SQL_WORDS:
            alias[a.lower()] = t
    ok(refs, f"{where}: SQL reads some table")
    out_alias = {a.lower() for a in re.findall(r"\bAS\s+`?(\w+)`?", s, re.I)}
    for q, c in re.findall(r"\b(\w+)\.(\w+)\b", s):
        if re.fullmatch(r"\d+", q):
            continue
        t = alias.get(q.lower())
        if ok(t is not None, f"{where}: qualifier {q} is a table or alias of the query"):
            ok(c.lower() in tables[t], f"{where}: column {q}.{c} exists in {t}")
    in_query = set().union(*[tables[t] for t in set(alias.values())]) if alias else set()
    bare = re.sub(r"\b\w+\.\w+\b", " ", s)
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\b(?!\s*\()", bare):
        w = m.group(1).lower()
        if w in SQL_WORDS or w in alias or w in out_alias:
            continue
        ok(w in in_query, f"{where}: column {w} exists in a table of the query ({sorted(set(alias.values()))})")


def check_grafana_sql(src):
    dss = datasources(src)
    tables = sql_schema(src)
    ok({"jobs", "job_phases", "job_tokio_summary", "job_summary"} <= set(tables), "mysql-schema: the job tables parse")
    n = 0
    for name, dash in grafana_dashboards(src):
        items = []
        for p in all_panels(dash.get("panels", [])):
            check_panel_ds(name, p, dss)
            for t in p.get("targets", []):
                items.append((f"{name} panel '{p.get('title')}' {t.get('refId')}", ds_of(t, ds_of(p)), t.get("rawSql")))
        for v in dash.get("templating", {}).get("list", []):
            if v.get("type") == "query":
                items.append((f"{name} variable {v['name']}", ds_of(v), v.get("query")))
        for where, d, sql in items:
            sd = dss.get(d.get("uid"))
            if not ok(sd is not None, f"{where}: data source uid {d.get('uid')} exists"):
                continue
            if sd["type"] != "mysql":
                continue
            n += 1
            ok(d.get("type", "mysql") == "mysql", f"{where}: data source type mysql")
            if ok(isinstance(sql, str) and sql.strip(), f"{where}: has SQL"):
                check_sql(where, sql, tables)
    ok(n > 0, "grafana-sql: some MySQL queries exist")
    print(f"grafana-sql: {n} SQL queries checked against {len(tables)} tables/views")


# ----------------------------------------------------------------- provisioning
def expand(s):
    return re.sub(r"\$\{([A-Z_]+)(?::?-([^}]*)|:\?[^}]*)?\}", lambda m: m.group(2) or "", s)


def check_grafana_provisioning(src):
    c = yaml.safe_load(open(os.path.join(src, "docker-compose.yml")))
    g = c["services"].get("grafana", {})
    mounts = {}
    for v in g.get("volumes", []):
        parts = expand(v).split(":")
        mounts[parts[1]] = parts[0]
    prov = mounts.get("/etc/grafana/provisioning")
    ok(prov is not None and os.path.isdir(os.path.join(src, prov)), "compose: grafana mounts the provisioning directory")
    pdir = os.path.join(src, "dashboards", "grafana", "provisioning", "dashboards")
    provs = []
    for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
        if name.endswith((".yml", ".yaml")):
            provs += (yaml.safe_load(open(os.path.join(pdir, name))) or {}).get("providers", []) or []
    ok(len(provs) > 0, "grafana: a dashboards provider exists")
    dashdir = os.path.join(src, "dashboards", "grafana", "dashboards")
    covered = set()
    for p in provs:
        path = p.get("options", {}).get("path", "")
        host = None
        for cont, h in mounts.items():
            if path == cont or path.startswith(cont + "/"):
                host = os.path.join(h, os.path.relpath(path, cont))
        if ok(host is not None, f"grafana: provider {p['name']} path {path} is mounted by docker-compose.yml"):
            hp = os.path.normpath(os.path.join(src, host))
            if ok(host.startswith("./") and os.path.isdir(hp), f"grafana: provider {p['name']} reads {host}, which exists in the repo"):
                covered |= {os.path.normpath(os.path.join(hp, f)) for f in os.listdir(hp)}
        ok(p.get("type") == "file", f"grafana: provider {p['name']} is a file provider")
    for name in os.listdir(dashdir):
        if name.endswith(".json"):
            ok(os.path.normpath(os.path.join(dashdir, name)) in covered, f"grafana: {name} is under a provider's path")
    dss = datasources(src)
    env = g.get("environment", {})
    for uid, d in dss.items():
        for var in re.findall(r"\$([A-Za-z]\w*)", json.dumps(d.get("secureJsonData", {}))):
            ok(var in env, f"grafana: data source {uid} needs ${var}, set in the grafana service's environment")
    uids = set()
    for name, dash in grafana_dashboards(src):
        ok(dash.get("uid") not in uids, f"grafana: dashboard uid {dash.get('uid')} unique")
        uids.add(dash.get("uid"))
        for u in re.findall(r'"uid"\s*:\s*"([^"]+)"', json.dumps(dash.get("panels", [])) + json.dumps(dash.get("templating", {}))):
            ok(u in dss, f"grafana: {name} uses data source uid {u}, which is provisioned")
    print(f"grafana-provisioning: {len(provs)} providers, {len(dss)} data sources")


# -------------------------------------------------------------------- generated
def check_generated(src):
    with tempfile.TemporaryDirectory() as t:
        for d in ("dashboards/kibana", "dashboards/grafana/dashboards"):
            os.makedirs(os.path.join(t, d))
        subprocess.run([sys.executable, os.path.join(src, "dashboards", "gen_dashboards.py"), "--source", src,
                        "--out", t], check=True)
        for d in ("dashboards/kibana", "dashboards/grafana/dashboards"):
            for name in os.listdir(os.path.join(t, d)):
                committed = os.path.join(src, d, name)
                ok(os.path.exists(committed) and filecmp.cmp(os.path.join(t, d, name), committed, shallow=False),
                   f"generated: {d}/{name} is what gen_dashboards.py writes (after a change to the generator or to "
                   f"mysql-schema/, rerun python3 dashboards/gen_dashboards.py and commit its output)")
    print("generated: compared")


# --------------------------------------------------------------------- selftest
MUTATIONS = [
    # (check, file, old, new, what the failure must mention)
    ("kibana", "dashboards/kibana/iosonar-job-io.ndjson", '\\"sourceField\\": \\"io.bytes\\"',
     '\\"sourceField\\": \\"io.bytez\\"', "io.bytez exists in the schema"),
    ("kibana", "dashboards/kibana/iosonar-file-system.ndjson", '\\"sourceField\\": \\"oss.read_bytes_per_s\\"',
     '\\"sourceField\\": \\"mds.ops_per_s\\"', "belongs to dataset iosonar.oss"),
    ("kibana", "dashboards/kibana/iosonar-file-system.ndjson", '\\"sourceField\\": \\"health.used_pct\\"',
     '\\"sourceField\\": \\"health.target_min\\"', "the operation needs"),
    ("kibana", "dashboards/kibana/iosonar-job-io.ndjson", 'event.dataset : \\\\\\"iosonar.result.phase\\\\\\"',
     'event.dataset : \\\\\\"iosonar.oss\\\\\\"', "covers dataset iosonar.oss"),
    ("kibana", "dashboards/kibana/iosonar-file-system.ndjson", 'health.record : \\\\\\"oss\\\\\\"',
     'health.recrd : \\\\\\"oss\\\\\\"', "health.recrd exists in the schema"),
    ("kibana", "dashboards/kibana/iosonar-job-io.ndjson", '"id": "iosonar-trace"', '"id": "iosonar-tracez"',
     "data view iosonar-tracez exists"),
    ("kibana", "dashboards/kibana/iosonar-job-io.ndjson", '\\"fieldName\\": \\"job.id\\"',
     '\\"fieldName\\": \\"job.idx\\"', "field job.idx is mapped"),
    ("kibana", "dashboards/kibana/iosonar-job-io.ndjson", '\\"dataType\\": \\"string\\", \\"operationType\\": \\"last_value\\"',
     '\\"dataType\\": \\"number\\", \\"operationType\\": \\"last_value\\"', "fits"),
    ("kibana", "dashboards/kibana/iosonar-file-system.ndjson",
     '\\"format\\": {\\"id\\": \\"number\\", \\"params\\": {\\"decimals\\": 1, \\"suffix\\": \\"%\\"}}',
     '\\"format\\": {\\"id\\": \\"percent\\", \\"params\\": {\\"decimals\\": 1}}', "fits health.used_pct's unit"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", '"unit": "ns"', '"unit": "ms"', "panel unit ms fits probe.latency_ns"),
    ("generated", "dashboards/grafana/dashboards/iosonar-jobs.json", '"refresh": 1', '"refresh": 2',
     "is what gen_dashboards.py writes"),
    ("kibana", "dashboards/kibana/iosonar-file-system.ndjson", '\\"ignoreGlobalFilters\\": true',
     '\\"ignoreGlobalFilters\\": false', "so a selection does not empty the panel"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", '"field": "oss.write_bytes_per_s"',
     '"field": "oss.write_byte_per_s"', "oss.write_byte_per_s exists in the schema"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", '"field": "probe.latency_ns"',
     '"field": "probe.op"', "the operation needs"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", '"field": "mds.ops_per_s"',
     '"field": "oss.ops_per_s"', "belongs to dataset iosonar.mds"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", 'health.target_kind:\\"ost\\"',
     'health.kind:\\"ost\\"', "health.kind exists in the schema"),
    ("grafana-es", "dashboards/grafana/dashboards/iosonar-file-system.json", '"orderBy": "_term"', '"orderBy": "1"',
     "single-value metric"),
    ("grafana-es", "dashboards/grafana/provisioning/datasources/iosonar.yml", "index: metrics-iosonar.*",
     "index: logs-iosonar.*", "covers dataset"),
    ("grafana-sql", "dashboards/grafana/dashboards/iosonar-jobs.json", "s.read_bw_avg,", "s.read_bw_mean,",
     "column s.read_bw_mean exists in job_summary"),
    ("grafana-sql", "dashboards/grafana/dashboards/iosonar-jobs.json", "FROM job_phases p", "FROM job_phase p",
     "table job_phase exists"),
    ("grafana-sql", "dashboards/grafana/dashboards/iosonar-jobs.json", "u.node_hours DESC", "node_hourz DESC",
     "column node_hourz exists"),
    ("grafana-sql", "dashboards/grafana/dashboards/iosonar-jobs.json", '"uid": "iosonar-mysql"',
     '"uid": "iosonar-mysqlx"', "uid iosonar-mysqlx exists"),
    ("grafana-provisioning", "docker-compose.yml", "./dashboards/grafana/dashboards:/var/lib/grafana-dashboards/iosonar",
     "./dashboards/grafana/dashboard:/var/lib/grafana-dashboards/iosonar", "which exists in the repo"),
    ("grafana-provisioning", "dashboards/grafana/provisioning/dashboards/iosonar.yml",
     "path: /var/lib/grafana-dashboards/iosonar", "path: /etc/dashboards/iosonar", "is mounted by docker-compose.yml"),
    ("grafana-provisioning", "dashboards/grafana/dashboards/iosonar-file-system.json", '"uid": "iosonar-sampler"',
     '"uid": "iosonar-samplerz"', "iosonar-samplerz, which is provisioned"),
]


def selftest(src, iosonar):
    for check, f, old, new, expect in MUTATIONS:
        with tempfile.TemporaryDirectory() as t:
            for d in ("dashboards", "es-templates", "mysql-schema"):
                shutil.copytree(os.path.join(src, d), os.path.join(t, d))
            shutil.copy(os.path.join(src, "docker-compose.yml"), t)
            p = os.path.join(t, f)
            text = open(p).read()
            if not ok(old in text, f"selftest: {f} contains {old!r} to mutate"):
                continue
            open(p, "w").write(text.replace(old, new, 1))
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--source", t, "--iosonar", iosonar, check],
                               capture_output=True, text=True)
            ok(r.returncode == 1 and expect in r.stdout,
               f"selftest: {check} fails on {f}: {old!r} -> {new!r} with '{expect}' (rc {r.returncode})")
            print(f"selftest: {check}: {old!r} -> {new!r}: rc {r.returncode}, "
                  + next((line for line in r.stdout.splitlines() if expect in line), "(expected message missing)"))
    print(f"selftest: {len(MUTATIONS)} mutations")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--iosonar", required=True)
    ap.add_argument("check", choices=["kibana", "grafana-es", "grafana-sql", "grafana-provisioning", "generated", "selftest"])
    a = ap.parse_args()
    fields, datasets = schema(a.iosonar)
    maps = mappings(a.source, datasets)
    {"kibana": lambda: check_kibana(a.source, fields, datasets, maps),
     "grafana-es": lambda: check_grafana_es(a.source, fields, datasets, maps),
     "grafana-sql": lambda: check_grafana_sql(a.source),
     "grafana-provisioning": lambda: check_grafana_provisioning(a.source),
     "generated": lambda: check_generated(a.source),
     "selftest": lambda: selftest(a.source, a.iosonar)}[a.check]()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
