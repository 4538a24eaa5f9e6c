#!/usr/bin/env python3
"""Static checks of iosonar's Elastic-stack artifacts (no Elasticsearch,
Logstash, Kibana, Grafana or Docker engine can run on the development
machines, so these artifacts are checked as text against the schema and
against each other).

usage: check_es_artifacts.py --source DIR --iosonar BIN CHECK
CHECK is one of:
  parse      every JSON, NDJSON and YAML artifact parses
  templates  every field mapped in es-templates/ exists in the schema, in that dataset, with the same type
  pipelines  every field the Logstash pipelines use exists in the schema; routing and index patterns
             match the templates; the Redis list is the collector's; the shipper/indexer/direct wiring
  compose    docker-compose.yml: services, ports, mounted paths exist in the repo and match the configs
  dashboards every index pattern / field in dashboards/ exists
Prints what it checked and 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import yaml

from checklib import FAILS, PASSES, ok, summary  # noqa: F401 (FAILS/PASSES used by the selftest)


def schema(iosonar):
    out = subprocess.run([iosonar, "schema", "--format", "json"], check=True, capture_output=True, text=True).stdout
    s = json.loads(out)
    fields = {f["name"]: f for f in s["fields"]}
    datasets = {d["name"]: d for d in s["datasets"]}
    # The engines' group keys: engine-only keyword fields of a dataset (doc values, not in _source).
    for k in s.get("group_keys", []):
        fields[k["name"]] = {"name": k["name"], "type": "keyword", "datasets": k["dataset"], "group_key": k["parts"]}
    return fields, datasets


def in_dataset(f, ds):
    return f["datasets"] == "*" or ds in f["datasets"].split()


def files_under(root, exts):
    for d, _, fs in os.walk(root):
        for f in sorted(fs):
            if f.endswith(exts):
                yield os.path.join(d, f)


# ---------------------------------------------------------------------------- parse
def check_parse(src):
    n = 0
    for p in files_under(os.path.join(src, "es-templates"), (".json",)):
        try:
            json.load(open(p))
            ok(True, p)
        except ValueError as e:
            ok(False, f"{p}: not JSON: {e}")
        n += 1
    dash = os.path.join(src, "dashboards")
    if os.path.isdir(dash):
        for p in files_under(dash, (".json",)):
            try:
                json.load(open(p))
                ok(True, p)
            except ValueError as e:
                ok(False, f"{p}: not JSON: {e}")
            n += 1
        for p in files_under(dash, (".ndjson",)):
            text = open(p).read()
            ok(text.endswith("\n"), f"{p}: NDJSON must end in a newline")
            for i, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    json.loads(line)
                    ok(True, f"{p}:{i}")
                except ValueError as e:
                    ok(False, f"{p}:{i}: not JSON: {e}")
            n += 1
    yamls = [os.path.join(src, f) for f in ("docker-compose.yml", "docker-compose-opensearch.yml")]
    for root in ("logstash-pipelines", "dashboards"):
        if os.path.isdir(os.path.join(src, root)):
            yamls += list(files_under(os.path.join(src, root), (".yml", ".yaml")))
    for p in yamls:
        try:
            yaml.safe_load(open(p))
            ok(True, p)
        except yaml.YAMLError as e:
            ok(False, f"{p}: not YAML: {e}")
        n += 1
    # Logstash .conf files: balanced braces and quotes outside comments (Logstash's own
    # grammar is not available here).
    for p in files_under(os.path.join(src, "logstash-pipelines"), (".conf",)):
        depth, in_str = 0, None
        for line in open(p):
            i = 0
            while i < len(line):
                c = line[i]
                if in_str:
                    if c == "\\":
                        i += 1
                    elif c == in_str:
                        in_str = None
                elif c == "#":
                    break
                elif c in "\"'":
                    in_str = c
                elif c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    ok(depth >= 0, f"{p}: unbalanced '}}'")
                i += 1
        ok(depth == 0 and in_str is None, f"{p}: braces/quotes balanced")
        n += 1
    print(f"parse: {n} files")


# ------------------------------------------------------------------------ templates
def walk_props(props, prefix=""):
    for name, m in props.items():
        full = prefix + name
        if "properties" in m:
            yield from walk_props(m["properties"], full + ".")
        else:
            yield full, m


def load_templates(src):
    mdir = os.path.join(src, "es-templates")
    manifest = json.load(open(os.path.join(mdir, "manifest.json")))
    arts = {}
    for a in manifest["put_in_order"]:
        arts[a["api_path"]] = json.load(open(os.path.join(mdir, a["file"])))
    return arts


def index_patterns(arts):
    pats = {}
    for path, body in arts.items():
        if path.startswith("/_index_template/"):
            for p in body["index_patterns"]:
                pats[p] = (path, body)
    return pats


def check_templates(src, fields, datasets):
    arts = load_templates(src)
    seen = 0
    for path, body in arts.items():
        if not path.startswith("/_component_template/") or not path.endswith("@mappings"):
            continue
        base = path.split("/")[-1][: -len("@mappings")]
        stype, ds = base.split("-", 1)
        ok(ds in datasets, f"{path}: dataset {ds} is in the schema")
        ok(datasets.get(ds, {}).get("stream_type") == stype, f"{path}: stream type {stype} is the schema's")
        mapped = set()
        for name, m in walk_props(body["template"]["mappings"]["properties"]):
            if name.startswith("data_stream."):
                ok(m["type"] == "constant_keyword", f"{path}: {name} is constant_keyword")
                continue
            mapped.add(name)
            f = fields.get(name)
            ok(f is not None, f"{path}: field {name} exists in the schema")
            if f:
                ok(m["type"] == f["type"], f"{path}: {name} is {m['type']}, schema says {f['type']}")
                ok(in_dataset(f, ds), f"{path}: {name} belongs to dataset {ds}")
            seen += 1
        want = {n for n, f in fields.items() if in_dataset(f, ds)}
        ok(mapped == want, f"{path}: maps exactly the dataset's fields (missing {sorted(want - mapped)}, extra {sorted(mapped - want)})")
    for ds, d in datasets.items():
        base = f"{d['stream_type']}-{ds}"
        it = arts.get(f"/_index_template/{base}")
        ok(it is not None, f"index template for dataset {ds}")
        if it:
            ok(it["index_patterns"] == [base + "-*"], f"{base}: pattern {base}-*")
            ok(it.get("priority", 0) > 100, f"{base}: priority above the built-in logs/metrics templates (100)")
            ok("data_stream" in it, f"{base}: data_stream")
            for c in it["composed_of"]:
                ok(f"/_component_template/{c}" in arts, f"{base}: component {c} exists")
            settings = [arts[f"/_component_template/{c}"] for c in it["composed_of"] if f"/_component_template/{c}" in arts]
            pol = [s["template"]["settings"].get("index.lifecycle.name") for s in settings if "settings" in s.get("template", {})]
            # Not time-series mode: a TSDS index refuses every write that brings its own _id
            # (iosonar's dedupe key) and returns a synthetic _source (docs/elastic.md).
            modes = [s["template"]["settings"].get("index.mode") for s in settings if "settings" in s.get("template", {})]
            ok("time_series" not in modes, f"{base}: not in time-series (TSDS) mode")
            ok(len(pol) == 1 and f"/_ilm/policy/{pol[0]}" in arts, f"{base}: one ILM policy that exists")
    # Overlapping patterns of equal priority are refused by Elasticsearch.
    pats = list(index_patterns(arts))
    for i, a in enumerate(pats):
        for b in pats[i + 1:]:
            ok(not (a[:-1].startswith(b[:-1]) or b[:-1].startswith(a[:-1])), f"patterns {a} and {b} do not overlap")
    print(f"templates: {seen} field mappings checked")


# ------------------------------------------------------------------------ pipelines
REF = re.compile(r"\[([^\[\]\"']+)\]")


def conf_text(p):
    return "".join(line.split("#", 1)[0] if not line.lstrip().startswith("#") else "" for line in open(p))


def check_pipelines(src, fields, datasets):
    ld = os.path.join(src, "logstash-pipelines")
    arts = load_templates(src)
    pats = index_patterns(arts)
    confs = {f: conf_text(os.path.join(ld, f)) for f in os.listdir(ld) if f.endswith(".conf")}
    allowed = {"tags", "@metadata", "@version", "data_stream", "type", "dataset", "namespace", "@timestamp", "iosonar", "key"}
    group_keys = {n: f["group_key"] for n, f in fields.items() if "group_key" in f}
    for name, text in confs.items():
        for ref in REF.findall(re.sub(r"\[@metadata\](\[[^\]]+\])*", "", text)):
            if ref in allowed or ref.startswith("@metadata"):
                continue
            if re.fullmatch(r"[a-z_@][a-z0-9_.@]*", ref) is None:
                continue  # array literals like ["iosonar_unknown_dataset"] are not references
            ok(ref in fields, f"{name}: field [{ref}] exists in the schema")
        # The dedupe id is the schema's dedupe key.
        # (check_deploy.py logstash checks how the id is built and guarded.)
        if "elasticsearch {" in text or "elasticsearch{" in text:
            ok('document_id => "%{[@metadata][iosonar_id]}"' in text, f"{name}: document_id from the dedupe key")
            ok('"[@metadata][iosonar_id]" => "%{[event.stream]}-%{[event.seq]}"' in text,
               f"{name}: the dedupe key is event.stream + event.seq")
            ok("if [user.id] =~ /^[0-9]+$/ {" in text and
               '"[@metadata][iosonar_id]" => "%{[event.stream]}-%{[event.seq]}-u%{[user.id]}"' in text,
               f"{name}: with a numeric user.id the key carries it, as iosonar's DedupeId")
            ok('data_stream => "true"' in text and "data_stream_auto_routing => true" in text, f"{name}: data stream routing")
            ok("manage_template => false" in text, f"{name}: templates come from iosonar es-setup, not Logstash")
            ok("[event.dataset]" in text, f"{name}: routes on event.dataset")
        if re.search(r"(elasticsearch|opensearch)\s*\{", text):
            # The group keys the engine's Groups() reads: the same parts, in the same order, as iosonar's writers.
            m = re.search(r"id => \"iosonar_group_keys\".*?init => '(.*?)'", text, re.S)
            if ok(m is not None, f"{name}: a ruby filter iosonar_group_keys writes the engines' group keys"):
                got = {f"iosonar.key.{k}": json.loads(v) for k, v in re.findall(r'"(\w+)" => (\[[^\]]*\])', m.group(1))}
                ok(got == group_keys, f"{name}: the group keys and their parts are iosonar's (got {got}, want {group_keys})")
                ok('if [event.dataset] == "iosonar.trace"' in text[:m.start()].rsplit("ruby {", 1)[0][-200:],
                   f"{name}: group keys only on iosonar.trace records")
                ok("key.bytesize <= 8192" in text, f"{name}: a key over 8192 bytes is left out, as iosonar's writers do")
    # The dictionary maps exactly the schema's datasets to their stream types, and each
    # routed stream matches an index template.
    types = yaml.safe_load(open(os.path.join(ld, "iosonar-stream-types.yml")))
    ok(types == {d: v["stream_type"] for d, v in datasets.items()}, "iosonar-stream-types.yml equals the schema's stream types")
    for ds, t in types.items():
        stream = f"{t}-{ds}-default"
        matching = [p for p in pats if stream.startswith(p[:-1])]
        ok(len(matching) == 1, f"data stream {stream} matches exactly one iosonar index template (got {matching})")
    # Wiring: shipper out and indexer in use the collector's Redis list.
    cache_h = open(os.path.join(src, "redis-cache", "cache.h")).read()
    m = re.search(r'kIngestList\s*=\s*"([^"]+)"', cache_h)
    ingest = m.group(1) if m else "iosonar:ingest"
    for name in ("shipper.conf", "indexer.conf", "indexer-opensearch.conf"):
        ok(f'key => "{ingest}"' in confs.get(name, ""), f"{name}: Redis list {ingest} (the collector's)")
        ok('data_type => "list"' in confs.get(name, ""), f"{name}: Redis data_type list")
    ok("tcp {" in confs.get("shipper.conf", "") and "json_lines" in confs.get("shipper.conf", ""), "shipper: tcp json_lines input")
    ok("tcp {" in confs.get("direct.conf", "") and "elasticsearch {" in confs.get("direct.conf", ""), "direct: tcp -> elasticsearch")
    for pfile, want in (("pipelines.yml", {"shipper.conf", "indexer.conf"}), ("pipelines-direct.yml", {"direct.conf"}),
                        ("pipelines-opensearch.yml", {"shipper.conf", "indexer-opensearch.conf"})):
        pl = yaml.safe_load(open(os.path.join(ld, pfile)))
        got = set()
        for p in pl:
            got.add(os.path.basename(p["path.config"]))
            ok(p.get("queue.type") == "persisted", f"{pfile}: {p['pipeline.id']} persisted queue")
            # Only the elasticsearch/opensearch outputs write to a dead-letter queue.
            conf = confs.get(os.path.basename(p["path.config"]), "")
            writes_dlq = re.search(r"\b(elasticsearch|opensearch)\s*\{", conf) is not None
            ok((p.get("dead_letter_queue.enable") is True) == writes_dlq,
               f"{pfile}: {p['pipeline.id']} dead letter queue {'on' if writes_dlq else 'off'} "
               f"(its output {'can' if writes_dlq else 'cannot'} write to it)")
            ok(p.get("pipeline.ecs_compatibility") == "v8", f"{pfile}: {p['pipeline.id']} ECS compatibility v8")
            ok(os.path.exists(os.path.join(ld, os.path.basename(p["path.config"]))), f"{pfile}: {p['path.config']} exists in the repo")
        ok(got == want, f"{pfile}: pipelines {sorted(want)}")
    print(f"pipelines: {len(confs)} configs checked")


# -------------------------------------------------------------------------- compose
def expand(s):
    # ${VAR:-default} / ${VAR:?msg} / ${VAR} -> the default (or "")
    return re.sub(r"\$\{([A-Z_]+)(?::?-([^}]*)|:\?[^}]*)?\}", lambda m: m.group(2) or "", s)


def check_compose(src):
    c = yaml.safe_load(open(os.path.join(src, "docker-compose.yml")))
    svcs = c["services"]
    for need in ("elasticsearch", "logstash", "kibana", "grafana", "redis", "mysql", "iosonar-collector", "iosonar-es-setup"):
        ok(need in svcs, f"compose: service {need}")
    images = {n: s.get("image", "") for n, s in svcs.items()}
    ok("elasticsearch:" in images.get("elasticsearch", "") and "8." in expand(images["elasticsearch"]), "compose: Elasticsearch 8")
    ok("logstash:" in images.get("logstash", "") and "8." in expand(images["logstash"]), "compose: Logstash 8")
    ok("kibana:" in images.get("kibana", "") and "8." in expand(images["kibana"]), "compose: Kibana 8")
    ok(images.get("mysql", "").startswith("mysql:8"), "compose: MySQL 8")
    named = set((c.get("volumes") or {}).keys())
    container_paths = {}
    for n, s in svcs.items():
        if n != "setup":
            ok("healthcheck" in s or s.get("restart") == "no", f"compose: {n} has a healthcheck (or is a one-shot job)")
        for dep in (s.get("depends_on") or {}):
            ok(dep in svcs, f"compose: {n} depends on existing service {dep}")
        if "build" in s:
            ok(os.path.exists(os.path.join(src, s["build"] if isinstance(s["build"], str) else s["build"]["context"], "Dockerfile")),
               f"compose: {n} builds from a Dockerfile in the repo")
        for v in s.get("volumes") or []:
            parts = expand(v).split(":")
            host, cont = parts[0], parts[1]
            container_paths.setdefault(n, {})[cont] = host
            if host.startswith("./") or host.startswith("/"):
                ok(os.path.exists(os.path.join(src, host)), f"compose: {n} mounts {host}, which exists in the repo")
            else:
                ok(host in named, f"compose: {n} uses declared named volume {host}")
    # Ports match the configs.
    def ports(n):
        return {str(p).split(":")[-1] for p in svcs.get(n, {}).get("ports", [])}
    ld = os.path.join(src, "logstash-pipelines")
    for conf in ("shipper.conf", "direct.conf"):
        for inp in ("tcp", "beats"):
            m = re.search(inp + r"\s*\{[^}]*?\n\s*port\s*=>\s*(\d+)", open(os.path.join(ld, conf)).read())
            ok(m is not None and m.group(1) in ports("logstash"), f"compose: logstash publishes the {inp} input port of {conf}")
    ok("9200" in ports("elasticsearch"), "compose: elasticsearch publishes 9200")
    ok("5601" in ports("kibana"), "compose: kibana publishes 5601")
    ok("6379" in ports("redis"), "compose: redis publishes 6379")
    col = svcs.get("iosonar-collector", {})
    listen = [a for a in col.get("command", []) if str(a).startswith("tcp://")]
    ok(listen and listen[0].rsplit(":", 1)[1] in ports("iosonar-collector"), "compose: collector publishes its --listen port")
    ok(any("redis://redis:" in str(a) for a in col.get("command", [])), "compose: collector pushes to the redis service")
    # Logstash: pipelines.yml mounted where Logstash reads it, every path.config and dictionary mounted.
    lp = container_paths.get("logstash", {})
    ok("/usr/share/logstash/config/pipelines.yml" in lp, "compose: logstash gets pipelines.yml")
    pl = yaml.safe_load(open(os.path.join(src, lp.get("/usr/share/logstash/config/pipelines.yml", "./missing"))))
    for p in pl:
        ok(p["path.config"] in lp, f"compose: {p['path.config']} is mounted into logstash")
    for conf in ("indexer.conf", "direct.conf"):
        m = re.search(r'dictionary_path\s*=>\s*"([^"]+)"', open(os.path.join(ld, conf)).read())
        ok(m is not None and m.group(1) in lp, f"compose: {conf}'s dictionary_path is mounted")
        m = re.search(r'ssl_certificate_authorities\s*=>\s*\["([^"]+)"\]', open(os.path.join(ld, conf)).read())
        ok(m is not None and any(m.group(1).startswith(cp + "/") for cp in lp), f"compose: {conf}'s CA file is under a mount")
        ok("IOSONAR_REDIS_HOST" not in open(os.path.join(ld, conf)).read() or "redis" in svcs, f"compose: redis for {conf}")
    env = svcs.get("logstash", {}).get("environment", {})
    ok(env.get("IOSONAR_REDIS_HOST") in svcs, "compose: logstash's IOSONAR_REDIS_HOST is a service")
    # es-setup talks to the elasticsearch service with the mounted CA.
    es_cmd = [expand(str(a)) for a in svcs.get("iosonar-es-setup", {}).get("command", [])]
    ok("https://elasticsearch:9200" in es_cmd, "compose: es-setup points at the elasticsearch service")
    if "--ca-file" in es_cmd:
        ca = es_cmd[es_cmd.index("--ca-file") + 1]
        ok(any(ca.startswith(cp + "/") for cp in container_paths.get("iosonar-es-setup", {})), "compose: es-setup's CA file is under a mount")
    print(f"compose: {len(svcs)} services checked")


# ----------------------------------------------------------------------- dashboards
def check_dashboards(src, fields, datasets):
    arts = load_templates(src)
    pats = list(index_patterns(arts))
    d = os.path.join(src, "dashboards")
    n = 0
    for p in files_under(d, (".yml", ".yaml")):
        y = yaml.safe_load(open(p)) or {}
        for ds in y.get("datasources", []) or []:
            idx = (ds.get("jsonData") or {}).get("index")
            if not idx:
                continue
            streams = [f"{v['stream_type']}-{k}-default" for k, v in datasets.items()]
            rx = re.compile("^" + re.escape(idx).replace(r"\*", ".*") + "$")
            ok(any(rx.match(s) for s in streams), f"{p}: index {idx} matches some iosonar data stream")
            tf = (ds.get("jsonData") or {}).get("timeField")
            ok(tf is None or tf in fields, f"{p}: timeField {tf} is a schema field")
            n += 1
    # Kibana saved objects: every data view's title matches some iosonar data stream.
    streams = [f"{v['stream_type']}-{k}-default" for k, v in datasets.items()]
    for p in files_under(d, (".ndjson",)):
        for line in open(p):
            if not line.strip():
                continue
            o = json.loads(line)
            if o.get("type") == "index-pattern":
                title = o["attributes"]["title"]
                rx = re.compile("^" + re.escape(title).replace(r"\*", ".*") + "$")
                ok(any(rx.match(s) for s in streams), f"{p}: data view {title} matches some iosonar data stream")
                tf = o["attributes"].get("timeFieldName")
                ok(tf is None or tf in fields, f"{p}: data view {title}'s time field {tf} is a schema field")
                n += 1
    for p in files_under(d, (".json", ".ndjson")):
        text = open(p).read()
        for ref in set(re.findall(r'"field"\s*:\s*"([^"]+)"', text)):
            ok(ref in fields, f"{p}: field {ref} exists in the schema")
        n += 1
    ok(len(pats) > 0, "templates exist for the dashboards to read")
    print(f"dashboards: {n} items checked")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--iosonar", required=True)
    ap.add_argument("check", choices=["parse", "templates", "pipelines", "compose", "dashboards"])
    a = ap.parse_args()
    fields, datasets = schema(a.iosonar)
    {"parse": lambda: check_parse(a.source),
     "templates": lambda: check_templates(a.source, fields, datasets),
     "pipelines": lambda: check_pipelines(a.source, fields, datasets),
     "compose": lambda: check_compose(a.source),
     "dashboards": lambda: check_dashboards(a.source, fields, datasets)}[a.check]()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
