#!/usr/bin/env python3
"""Checks of the deployment artifacts that cannot run here (no Docker engine,
no Logstash): the compose files, the shell scripts embedded in them, and the
Logstash pipelines' ids, outputs and OpenSearch variant.

usage: check_deploy.py --source DIR CHECK
CHECK is one of:
  compose     `docker-compose config` (Debian's docker-compose) accepts docker-compose.yml and
              docker-compose-opensearch.yml (with .env.example's values); no shell command is a
              folded (>) YAML block
  shell       every shell script embedded in a compose file (command/entrypoint `bash -c`/`sh -c`,
              healthcheck CMD-SHELL) passes `bash -n` and `shellcheck`; no command word is a URL
              or a relative path (the container's working directory is not the script's)
  logstash    every document_id of an elasticsearch/opensearch output is built only from fields
              the pipeline checked exist (no event can get a fixed literal id), 409s are silenced
              where an id is set, events without an id still have an output, data streams are
              written with create
  opensearch  indexer-opensearch.conf is indexer.conf with an opensearch output: the same input
              and filter, the same streams, the same id expression; docker-compose-opensearch.yml
              mounts what its pipelines need, runs es-setup against the opensearch service, and
              gives Logstash OSS no x-pack setting
  selftest    each check above fails on a mutated copy (the bugs these checks were written for)
Prints what it checked and 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

from checklib import ok, summary

COMPOSE_FILES = ("docker-compose.yml", "docker-compose-opensearch.yml")


# -------------------------------------------------------------------- compose
def compose_config(src, name):
    """`docker-compose config` of one compose file: (returncode, stdout, stderr)."""
    exe = shutil.which("docker-compose")
    if exe is None:
        return 127, "", "docker-compose is not installed (scripts/setup.sh TEST_PKGS)"
    cmd = [exe, "--project-directory", src, "-f", os.path.join(src, name)]
    if os.path.exists(os.path.join(src, ".env.example")):
        cmd += ["--env-file", os.path.join(src, ".env.example")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    r = subprocess.run(cmd + ["config"], capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def check_compose(src):
    for name in COMPOSE_FILES:
        p = os.path.join(src, name)
        if not ok(os.path.exists(p), f"{name} exists"):
            continue
        rc, out, err = compose_config(src, name)
        ok(rc == 0, f"{name}: docker-compose config accepts it (rc {rc}: {err.strip()[:600]})")
        # A folded block (>) joins lines with spaces but keeps the newlines around more-indented
        # lines: a shell command split that way runs as two commands.
        for i, line in enumerate(open(p), 1):
            ok(re.search(r"^\s*(?:-\s+|(?:command|entrypoint|test)\s*:\s*)>[-+]?\s*$", line) is None,
               f"{name}:{i}: a shell command in a folded (>) block; use a literal block (|) or a list")
    print(f"compose: {len(COMPOSE_FILES)} files")


def embedded_scripts(config):
    """(service, what, shell, script) for every shell script a compose config runs."""
    out = []
    for svc, s in (config.get("services") or {}).items():
        for key in ("entrypoint", "command"):
            v = s.get(key)
            if isinstance(v, str):
                v = shlex.split(v)
            if isinstance(v, list) and len(v) >= 3 and os.path.basename(str(v[0])) in ("bash", "sh") and v[1] == "-c":
                out.append((svc, key, os.path.basename(v[0]), str(v[2])))
        t = (s.get("healthcheck") or {}).get("test")
        if isinstance(t, str):
            out.append((svc, "healthcheck", "sh", t))
        elif isinstance(t, list) and t:
            if t[0] == "CMD-SHELL":
                out.append((svc, "healthcheck", "sh", str(t[1])))
            elif t[0] == "CMD" and len(t) >= 4 and os.path.basename(t[1]) in ("bash", "sh") and t[2] == "-c":
                out.append((svc, "healthcheck", os.path.basename(t[1]), str(t[3])))
    return out


def command_words(script):
    """The first word of each simple command, roughly: after joining continued lines, at the
    start of a line or after ; && || | then do else ( {."""
    text = re.sub(r"\\\n", " ", script)
    words = []
    for line in text.splitlines():
        line = re.sub(r"#.*$", "", line) if not re.search(r"[\"'].*#", line) else line
        for part in re.split(r";|&&|\|\||\||\bthen\b|\bdo\b|\belse\b|^\s*\(|\{", line):
            w = part.strip().split()
            while w and re.fullmatch(r"[A-Za-z_]\w*=\S*", w[0]):
                w = w[1:]  # VAR=value prefixes
            if w and w[0] not in ("if", "until", "while", "!", "fi", "done", "}", ")", "[", "[["):
                words.append(w[0])
    return words


def check_shell(src):
    have_sc = shutil.which("shellcheck") is not None
    ok(have_sc, "shellcheck is installed (scripts/setup.sh TEST_PKGS)")
    n = 0
    for name in COMPOSE_FILES:
        rc, out, err = compose_config(src, name)
        if not ok(rc == 0, f"{name}: docker-compose config accepts it (rc {rc}: {err.strip()[:300]})"):
            continue
        for svc, what, shell, script in embedded_scripts(yaml.safe_load(out)):
            script = script.replace("$$", "$")  # compose's escape, still there in `config` output
            where = f"{name} {svc} {what}"
            n += 1
            r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
            ok(r.returncode == 0, f"{where}: bash -n: {r.stderr.strip()}")
            if have_sc:
                r = subprocess.run(["shellcheck", "-s", shell, "-"], input=script, capture_output=True, text=True)
                ok(r.returncode == 0, f"{where}: shellcheck -s {shell}:\n{r.stdout.strip()}")
            for w in command_words(script):
                ok("://" not in w, f"{where}: '{w}' is run as a command (a URL on a line of its own: "
                                   f"a command split over lines without a backslash)")
                ok("/" not in w or w.startswith(("/", "$", '"$')),
                   f"{where}: command {w} is a relative path (give it absolutely: the working "
                   f"directory is the image's, or whatever an earlier cd made it)")
    ok(n >= 5, f"shell: found the embedded scripts ({n})")
    print(f"shell: {n} embedded scripts")


# ------------------------------------------------------------------- logstash
class Block:
    def __init__(self, kind, header, parent=None):
        self.kind, self.header, self.parent, self.children, self.text = kind, header, parent, [], ""

    def conditions(self):
        """The if/else-if conditions that hold around this block ('else' branches give none)."""
        out, b = [], self
        while b is not None:
            if b.kind == "if":
                out.append(b.header)
            b = b.parent
        return out


def strip_comments(text):
    out = []
    for line in text.splitlines():
        res, q = "", None
        for c in line:
            if q:
                q = None if c == q else q
            elif c in "\"'":
                q = c
            elif c == "#":
                break
            res += c
        out.append(res)
    return "\n".join(out)


def parse_conf(text):
    """A Logstash config as a tree of blocks: sections, plugins, if/else if/else."""
    text = strip_comments(text)
    root = Block("root", "")
    cur = root
    tok = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\{|\}|[^{}"\']+')
    pending = ""
    for m in tok.finditer(text):
        t = m.group(0)
        if t == "{":
            h = pending.strip()
            mm = re.search(r"(?:^|\n|\s)(else\s+if\s+.*|if\s+.*|else|[A-Za-z_][\w-]*)\s*$", h, re.S)
            head = mm.group(1).strip() if mm else h
            if head.startswith("else if"):
                b = Block("if", head[len("else if"):].strip(), cur)
            elif head.startswith("if"):
                b = Block("if", head[2:].strip(), cur)
            elif head == "else":
                b = Block("else", "", cur)
            elif re.fullmatch(r"[A-Za-z_][\w-]*", head) and not re.search(r"=>\s*$", h[: len(h) - len(head)]):
                b = Block("plugin", head, cur)
            else:
                b = Block("hash", head, cur)
            cur.text += pending
            cur.children.append(b)
            cur, pending = b, ""
        elif t == "}":
            cur.text += pending
            pending = ""
            if cur.kind == "hash":
                cur.parent.text += "{" + cur.text + "}"
            cur = cur.parent or root
        else:
            pending += t
    return root


def walk(b):
    yield b
    for c in b.children:
        yield from walk(c)


def setting(plugin, name):
    m = re.search(r"\b" + re.escape(name) + r'\s*=>\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\S+)', plugin.text)
    return m.group(1).strip('"') if m else None


def refs(expr):
    return re.findall(r"%\{(\[[^}]+\])\}", expr or "")


def section(root, name):
    return next((c for c in root.children if c.kind == "plugin" and c.header == name), None)


def check_conf(name, text):
    root = parse_conf(text)
    filt, outp = section(root, "filter"), section(root, "output")
    # [@metadata][K] set by add_field from event fields: each field checked by an enclosing if.
    guarded = {}
    for b in walk(filt) if filt else []:
        if b.kind == "plugin" and b.header == "mutate":
            for key, expr in re.findall(r'"(\[@metadata\][^"]+)"\s*=>\s*"([^"]*)"', b.text):
                conds = " ".join(b.conditions())
                missing = [r for r in refs(expr) if r not in conds]
                ok(not missing, f"{name}: {key} is set from {missing} without an if checking they exist "
                                f"(events without them would get the literal text '{expr}')")
                guarded[key] = not missing
    outs = [b for b in walk(outp) if b.kind == "plugin" and b.header in ("elasticsearch", "opensearch")] if outp else []
    with_id, without_id = [], []
    for o in outs:
        where = f"{name}: output {setting(o, 'id') or o.header}"
        did = setting(o, "document_id")
        conds = " ".join(o.conditions())
        if o.header == "elasticsearch":
            ok(setting(o, "data_stream") == "true", f"{where}: data_stream => \"true\" (writes with create)")
        else:
            ok(setting(o, "action") == "create", f"{where}: action => \"create\" (data streams take no other)")
        ok(setting(o, "manage_template") == "false", f"{where}: manage_template => false (iosonar es-setup installs them)")
        if did is None:
            without_id.append(o)
            continue
        with_id.append(o)
        rs = refs(did)
        ok(len(rs) > 0, f"{where}: document_id {did} is built from the event's fields (not a constant)")
        for r in rs:
            if r.startswith("[@metadata]"):
                ok(guarded.get(r, False), f"{where}: document_id uses {r}, which the filter sets only from checked fields")
            ok(r in conds, f"{where}: document_id uses {r} outside an if checking it exists (events without it "
                           f"would all get the one literal id '{did}')")
        silence = setting(o, "silence_errors_in_log" if o.header == "elasticsearch" else "failure_type_logging_whitelist")
        ok(silence is not None and "version_conflict_engine_exception" in silence,
           f"{where}: 409s of resends silenced ({'silence_errors_in_log' if o.header == 'elasticsearch' else 'failure_type_logging_whitelist'}"
           f" => [\"version_conflict_engine_exception\"])")
    if with_id:
        ok(any(not o.conditions() for o in without_id),
           f"{name}: events without a dedupe id have an output too (one without document_id under no if, "
           f"as the else of the id's if: not dropped)")
    return root, outs


# The options each plugin the pipelines use accepts (read from the plugins' `config :name`
# declarations: logstash-input-tcp, -input-redis, -output-redis, -filter-translate,
# -filter-mutate, -filter-drop, -output-elasticsearch, logstash-output-opensearch), plus what
# every input/filter/output takes from Logstash's base classes and the ECS mixin. Logstash
# refuses to start a pipeline with an unknown option; this catches a misspelt one here.
PLUGIN_OPTIONS = {
    ("input", "tcp"): "dns_reverse_lookup_enabled host mode port proxy_protocol ssl_cert ssl_certificate "
                      "ssl_certificate_authorities ssl_cipher_suites ssl_client_authentication ssl_enable ssl_enabled "
                      "ssl_extra_chain_certs ssl_key ssl_key_passphrase ssl_supported_protocols ssl_verification_mode "
                      "ssl_verify tcp_keep_alive",
    ("input", "redis"): "batch_count command_map data_type db host key password path port ssl timeout",
    # logstash-input-beats 6.6+ (Logstash 8.15 bundles 6.8; 7.0 dropped ssl, ssl_verify_mode,
    # ssl_peer_metadata, cipher_suites, tls_min/max_version): the options both accept.
    ("input", "beats"): "add_hostname client_inactivity_timeout enrich event_loop_threads executor_threads host "
                        "include_codec_tag port ssl_certificate ssl_certificate_authorities ssl_cipher_suites "
                        "ssl_client_authentication ssl_enabled ssl_handshake_timeout ssl_key ssl_key_passphrase "
                        "ssl_supported_protocols",
    ("output", "redis"): "batch batch_events batch_timeout congestion_interval congestion_threshold data_type db host "
                         "key password port reconnect_interval shuffle_hosts ssl_certificate ssl_certificate_authorities "
                         "ssl_cipher_suites ssl_enabled ssl_key ssl_key_passphrase ssl_supported_protocols "
                         "ssl_verification_mode timeout",
    ("filter", "translate"): "destination dictionary dictionary_path exact fallback field iterate_on override "
                             "refresh_behaviour refresh_interval regex source target yaml_dictionary_code_point_limit "
                             "yaml_load_strategy",
    ("filter", "mutate"): "capitalize coerce convert copy gsub join lowercase merge rename replace split strip "
                          "tag_on_failure update uppercase",
    ("filter", "drop"): "percentage",
    ("filter", "ruby"): "code init path script_params tag_on_exception tag_with_exception_message",
    ("output", "elasticsearch"): "action api_key bulk_path cloud_auth cloud_id compression_level custom_headers "
                                 "data_stream data_stream_auto_routing data_stream_dataset data_stream_namespace "
                                 "data_stream_sync_fields data_stream_type dlq_custom_codes "
                                 "dlq_on_failed_indexname_interpolation doc_as_upsert document_id document_type "
                                 "drop_error_types failure_type_logging_whitelist healthcheck_path hosts "
                                 "http_compression ilm_enabled ilm_pattern ilm_policy ilm_rollover_alias index "
                                 "join_field keystore_password manage_template parameters parent password path pipeline "
                                 "pool_max pool_max_per_route proxy resurrect_delay retry_initial_interval "
                                 "retry_max_interval retry_on_conflict routing script script_lang script_type "
                                 "script_var_name scripted_upsert silence_errors_in_log sniffing sniffing_delay "
                                 "sniffing_path ssl_certificate ssl_certificate_authorities ssl_cipher_suites ssl_enabled "
                                 "ssl_key ssl_keystore_password ssl_keystore_path ssl_keystore_type ssl_supported_protocols "
                                 "ssl_truststore_password ssl_truststore_path ssl_truststore_type ssl_verification_mode "
                                 "template template_api template_name template_overwrite timeout truststore_password "
                                 "upsert user validate_after_inactivity version version_type",
    ("output", "opensearch"): "action auth_type bulk_path cacert custom_headers default_server_major_version "
                              "doc_as_upsert document_id document_type failure_type_logging_whitelist healthcheck_path "
                              "hosts http_compression index join_field keystore keystore_password legacy_template "
                              "manage_template parameters parent password path pipeline pool_max pool_max_per_route "
                              "proxy resurrect_delay retry_initial_interval retry_max_interval retry_on_conflict routing "
                              "script script_lang script_type script_var_name scripted_upsert sniffing sniffing_delay "
                              "sniffing_path ssl ssl_certificate_verification target_bulk_bytes template template_name "
                              "template_overwrite timeout tls_certificate tls_key truststore truststore_password upsert "
                              "user validate_after_inactivity version version_type",
}
COMMON_OPTIONS = {
    "input": "add_field codec enable_metric id tags type ecs_compatibility",
    "filter": "add_field add_tag enable_metric id periodic_flush remove_field remove_tag ecs_compatibility",
    "output": "codec enable_metric id ecs_compatibility",
}


def top_level_options(text):
    """Option names of a plugin block: `name =>` outside any nested {...} (codec settings, hashes)."""
    prev = None
    while prev != text:
        prev, text = text, re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return re.findall(r"(?:^|\s)([A-Za-z_][\w]*)\s*=>", text)


def check_options(name, root):
    n = 0
    for sec in ("input", "filter", "output"):
        s = section(root, sec)
        for b in walk(s) if s else []:
            if b.kind != "plugin" or b is s:
                continue
            known = PLUGIN_OPTIONS.get((sec, b.header))
            if not ok(known is not None, f"{name}: {sec} plugin {b.header} is one these checks know the options of"):
                continue
            allowed = set(known.split()) | set(COMMON_OPTIONS[sec].split())
            for opt in top_level_options(b.text):
                n += 1
                ok(opt in allowed, f"{name}: {sec} {b.header} has no option {opt} (Logstash would refuse the pipeline)")
    return n


BEATS_ENRICH = {"source_metadata", "codec_metadata", "ssl_peer_metadata", "none", "all"}


def check_beats(src, name, text, root):
    """The Lumberjack v2 (beats) input that README's `--output lumberjack://LOGSTASH:5044` reaches."""
    inp = section(root, "input")
    beats = [b for b in walk(inp) if b.kind == "plugin" and b.header == "beats"] if inp else []
    if not ok(len(beats) == 1, f"{name}: a beats input (the senders' lumberjack://HOST:5044) beside the tcp one"):
        return
    b = beats[0]
    ok(setting(b, "port") == "5044", f"{name}: beats input on port 5044 (Beats' port, as README says), not {setting(b, 'port')}")
    enrich = re.findall(r'"([^"]*)"', setting(b, "enrich") or "")
    ok(enrich and set(enrich) <= BEATS_ENRICH and "codec_metadata" not in enrich and "all" not in enrich,
       f"{name}: beats enrich {enrich} is set, valid ({sorted(BEATS_ENRICH)}) and adds no tags (codec_metadata "
       f"tags every record beats_input_raw_event)")
    ok(setting(b, "include_codec_tag") is None, f"{name}: beats has no include_codec_tag (deprecated; refused with enrich)")
    # The TLS options shipped commented out must be ones Logstash accepts once uncommented.
    m = re.search(r"\n\s*beats\s*\{(.*?)\n\s*\}", text, re.S)
    commented = re.findall(r"^\s*#\s*([a-z_]+)\s*=>", m.group(1), re.M) if m else []
    known = set(PLUGIN_OPTIONS[("input", "beats")].split())
    ok("ssl_enabled" in commented, f"{name}: beats input shows its TLS options (commented): {commented}")
    for opt in commented:
        ok(opt in known, f"{name}: the commented beats option {opt} is one the beats input has")


def check_beats_deployment(src):
    # Records reach the beats input whole only when they have no "message"/"line"
    # field (else the input runs its codec on that field alone).
    fd = os.path.join(src, "core/records/fields.def")
    if os.path.exists(fd):
        names = re.findall(r'^X\(\w+,\s*"([^"]+)"', open(fd).read(), re.M)
        ok(len(names) > 50 and not {"message", "line"} & set(names),
           "fields.def declares no 'message' or 'line' field (the beats input would decode it with its codec)")
    readme = os.path.join(src, "README.md")
    if os.path.exists(readme):
        ok("lumberjack://LOGSTASH:5044" in open(readme).read(), "README points the exporters at lumberjack://LOGSTASH:5044")
    for cf in COMPOSE_FILES:
        p = os.path.join(src, cf)
        if not os.path.exists(p):
            continue
        ports = [str(x) for x in (yaml.safe_load(open(p)).get("services", {}).get("logstash", {}).get("ports") or [])]
        ok(any(x.endswith(":5044") for x in ports), f"{cf}: logstash publishes the beats port 5044 ({ports})")


def check_logstash(src):
    ld = os.path.join(src, "logstash-pipelines")
    n = nopts = 0
    for f in sorted(os.listdir(ld)):
        if f.endswith(".conf"):
            text = open(os.path.join(ld, f)).read()
            root, outs = check_conf(f, text)
            nopts += check_options(f, root)
            n += len(outs)
            if f in ("shipper.conf", "direct.conf"):  # the pipelines the senders reach (pipelines*.yml)
                check_beats(src, f, text, root)
    check_beats_deployment(src)
    ok(nopts > 50, f"logstash: found the plugins' options ({nopts})")
    ok(n >= 6, f"logstash: found the elasticsearch/opensearch outputs ({n})")
    print(f"logstash: {n} outputs checked")


# ----------------------------------------------------------------- opensearch
def input_and_filter(text):
    t = strip_comments(text)
    return re.sub(r"\s+", " ", t[t.index("input {"):t.index("output {")]).strip()


def expand(s):
    return re.sub(r"\$\{([A-Z_]+)(?::?-([^}]*)|:\?[^}]*)?\}", lambda m: m.group(2) or "", s)


def check_opensearch(src):
    ld = os.path.join(src, "logstash-pipelines")
    es_text = open(os.path.join(ld, "indexer.conf")).read()
    p = os.path.join(ld, "indexer-opensearch.conf")
    if not ok(os.path.exists(p), "indexer-opensearch.conf exists"):
        return
    os_text = open(p).read()
    ok(input_and_filter(es_text) == input_and_filter(os_text),
       "indexer-opensearch.conf has indexer.conf's input and filter (the same routing and id)")
    es_root, es_outs = check_conf("indexer.conf", es_text)
    os_root, os_outs = check_conf("indexer-opensearch.conf", os_text)
    ok(all(o.header == "opensearch" for o in os_outs) and os_outs, "indexer-opensearch.conf: outputs are opensearch")
    ok(sorted(tuple(o.conditions()) for o in es_outs) == sorted(tuple(o.conditions()) for o in os_outs),
       "the outputs sit under the same conditions in both")
    ok(sorted(str(setting(o, "document_id")) for o in es_outs) == sorted(str(setting(o, "document_id")) for o in os_outs),
       "the same document_id expressions in both")
    # Elasticsearch's data_stream_auto_routing names the stream type-dataset-namespace from data_stream.*.
    want = "%{[data_stream][type]}-%{[data_stream][dataset]}-%{[data_stream][namespace]}"
    for o in os_outs:
        ok(setting(o, "index") == want, f"indexer-opensearch.conf {setting(o, 'id')}: index {setting(o, 'index')} "
                                        f"is the stream auto routing names ({want})")
    for o in es_outs:
        ok(setting(o, "data_stream_auto_routing") == "true", f"indexer.conf {setting(o, 'id')}: data_stream_auto_routing")
    # The compose file.
    cp = os.path.join(src, "docker-compose-opensearch.yml")
    if not ok(os.path.exists(cp), "docker-compose-opensearch.yml exists"):
        return
    c = yaml.safe_load(open(cp))
    svcs = c.get("services", {})
    for need in ("opensearch", "opensearch-dashboards", "logstash", "redis", "iosonar-es-setup", "iosonar-collector"):
        ok(need in svcs, f"opensearch compose: service {need}")
    named = set((c.get("volumes") or {}).keys())
    mounts = {}
    for n_, s in svcs.items():
        for dep in s.get("depends_on") or {}:
            ok(dep in svcs, f"opensearch compose: {n_} depends on existing service {dep}")
        ok("healthcheck" in s or s.get("restart") == "no", f"opensearch compose: {n_} has a healthcheck or is one-shot")
        for v in s.get("volumes") or []:
            host, cont = expand(v).split(":")[:2]
            mounts.setdefault(n_, {})[cont] = host
            if host.startswith(("./", "/")):
                ok(os.path.exists(os.path.join(src, host)), f"opensearch compose: {n_} mounts {host}, which exists")
            else:
                ok(host in named, f"opensearch compose: {n_} uses declared volume {host}")
    ls = svcs.get("logstash", {})
    ok("opensearch-output-plugin" in ls.get("image", "") or "build" in ls,
       "opensearch compose: logstash is an image with logstash-output-opensearch")
    lm = mounts.get("logstash", {})
    pl_host = lm.get("/usr/share/logstash/config/pipelines.yml")
    if ok(pl_host is not None and os.path.exists(os.path.join(src, pl_host)), "opensearch compose: logstash gets a pipelines.yml"):
        pls = yaml.safe_load(open(os.path.join(src, pl_host)))
        for pl in pls:
            pc = pl["path.config"]
            ok(pc in lm, f"opensearch compose: {pc} is mounted into logstash")
            ok(not lm.get(pc, "").endswith("/indexer.conf"), f"opensearch compose: {pc} is not the elasticsearch indexer")
        ok(any(lm.get(pl["path.config"], "").endswith("indexer-opensearch.conf") for pl in pls),
           "opensearch compose: the indexer is indexer-opensearch.conf")
    dict_path = re.search(r'dictionary_path\s*=>\s*"([^"]+)"', os_text)
    ok(dict_path is not None and dict_path.group(1) in lm, "opensearch compose: the dataset dictionary is mounted")
    lsyml = lm.get("/usr/share/logstash/config/logstash.yml")
    if ok(lsyml is not None, "opensearch compose: logstash.yml mounted"):
        settings = yaml.safe_load(open(os.path.join(src, lsyml))) or {}
        ok(not any(str(k).startswith("xpack.") for k in settings),
           f"opensearch compose: {lsyml} has no xpack.* setting (Logstash OSS refuses to start on one)")
    host_default = re.search(r'hosts\s*=>\s*\["\$\{OPENSEARCH_HOSTS:([^}]+)\}"\]', os_text)
    env = ls.get("environment", {})
    ok(host_default is not None and env.get("OPENSEARCH_HOSTS", host_default.group(1)).split("//")[-1].split(":")[0] in svcs,
       "opensearch compose: logstash's OPENSEARCH_HOSTS is the opensearch service")
    cmd = [expand(str(a)) for a in svcs.get("iosonar-es-setup", {}).get("command", [])]
    url = cmd[cmd.index("--url") + 1] if "--url" in cmd else ""
    ok(re.fullmatch(r"https?://opensearch:9200", url) is not None, f"opensearch compose: es-setup runs against opensearch ({url})")
    env_os = svcs.get("opensearch", {}).get("environment", {})
    insecure = str(env_os.get("DISABLE_SECURITY_PLUGIN", "")).lower() == "true"
    for port in svcs.get("opensearch", {}).get("ports", []) + svcs.get("opensearch-dashboards", {}).get("ports", []):
        ok(not insecure or str(port).startswith("127.0.0.1:"),
           f"opensearch compose: without the security plugin, port {port} is published on loopback only")
    print(f"opensearch: {len(os_outs)} outputs, {len(svcs)} services")


# ------------------------------------------------------------------- selftest
MUTATIONS = [
    # (check, file, old, new, what the failure must mention)
    ("shell", "docker-compose.yml", "certutil=/usr/share/elasticsearch/bin/elasticsearch-certutil",
     "certutil=bin/elasticsearch-certutil\n        cd /usr/share/elasticsearch/config/certs\n        bin/elasticsearch-certutil --help",
     "is a relative path"),
    ("shell", "docker-compose.yml", '-H "Content-Type: application/json" \\\n', '-H "Content-Type: application/json"\n',
     "a URL on a line of its own"),
    ("shell", "docker-compose.yml", "          sleep 5\n        done\n        echo \"setting", "          sleep 5\n        echo \"setting",
     "bash -n"),
    ("shell", "docker-compose.yml", 'grep -q "^{}"', 'grep -q ^{}$$KIBANA_PASSWORD', "shellcheck"),
    ("shell", "docker-compose-opensearch.yml", "grep -q iosonar\"]", "grep -q $$X\"]", "shellcheck"),
    ("compose", "docker-compose.yml", "services:\n", "name: iosonar\nservices:\n", "docker-compose config accepts it"),
    ("compose", "docker-compose-opensearch.yml", "        condition: service_completed_successfully",
     "        condition: service_completed", "docker-compose config accepts it"),
    ("compose", "docker-compose.yml", "    command:\n      - bash\n      - -c\n      - |\n", "    command:\n      - bash\n      - -c\n      - >\n",
     "folded (>) block"),
    ("logstash", "logstash-pipelines/indexer.conf", "  if [event.stream] and [event.seq] {", "  if [event.stream] {",
     "without an if checking they exist"),
    ("logstash", "logstash-pipelines/direct.conf", 'document_id => "%{[@metadata][iosonar_id]}"',
     'document_id => "%{[event.stream]}-%{[event.seq]}"', "outside an if checking it exists"),
    ("logstash", "logstash-pipelines/indexer.conf", '      silence_errors_in_log => ["version_conflict_engine_exception"]\n', "",
     "409s of resends silenced"),
    ("logstash", "logstash-pipelines/indexer-opensearch.conf",
     '      failure_type_logging_whitelist => ["version_conflict_engine_exception"]\n', "", "409s of resends silenced"),
    ("logstash", "logstash-pipelines/indexer.conf", '      silence_errors_in_log => ["version',
     '      silence_error_in_log => ["version', "has no option silence_error_in_log"),
    ("logstash", "logstash-pipelines/shipper.conf", '    codec => json\n', '    codec => json\n    ecs => v8\n',
     "has no option ecs"),
    ("logstash", "logstash-pipelines/shipper.conf", '  beats {\n    id => "iosonar_beats_in"', '  tcp {\n    id => "iosonar_beats_in"',
     "a beats input (the senders' lumberjack://HOST:5044)"),
    ("logstash", "logstash-pipelines/direct.conf", "    port => 5044\n", "    port => 5045\n", "beats input on port 5044"),
    ("logstash", "logstash-pipelines/shipper.conf", '    enrich => ["source_metadata"]', '    enrich => ["codec_metadata"]',
     "adds no tags"),
    ("logstash", "logstash-pipelines/shipper.conf", "    # ssl_client_authentication", "    # ssl_verify_mode",
     "the commented beats option ssl_verify_mode"),
    ("logstash", "docker-compose.yml", '      - "5044:5044"\n', "", "logstash publishes the beats port 5044"),
    ("logstash", "docker-compose-opensearch.yml", '      - "5044:5044"\n', "", "logstash publishes the beats port 5044"),
    ("logstash", "logstash-pipelines/indexer-opensearch.conf", '      action => "create"\n      # A record', '      # A record',
     "action => \"create\""),
    ("logstash", "logstash-pipelines/indexer.conf", "  } else {\n    elasticsearch {", "  } else if [x] {\n    elasticsearch {",
     "events without a dedupe id have an output"),
    ("opensearch", "logstash-pipelines/indexer-opensearch.conf", 'add_field => { "[data_stream][dataset]" => "iosonar.unknown" }',
     'add_field => { "[data_stream][dataset]" => "iosonar.other" }', "input and filter"),
    ("opensearch", "logstash-pipelines/indexer-opensearch.conf",
     'index => "%{[data_stream][type]}-%{[data_stream][dataset]}-%{[data_stream][namespace]}"\n      action => "create"\n      # A record',
     'index => "%{[data_stream][dataset]}-%{[data_stream][namespace]}"\n      action => "create"\n      # A record',
     "is the stream auto routing names"),
    ("opensearch", "docker-compose-opensearch.yml", "./logstash-pipelines/logstash-oss.yml:", "./logstash-pipelines/logstash.yml:",
     "no xpack.* setting"),
    ("opensearch", "docker-compose-opensearch.yml", "./logstash-pipelines/pipelines-opensearch.yml:", "./logstash-pipelines/pipelines.yml:",
     "is mounted into logstash"),
    ("opensearch", "docker-compose-opensearch.yml", '"--url", "http://opensearch:9200"', '"--url", "http://elasticsearch:9200"',
     "es-setup runs against opensearch"),
    ("opensearch", "docker-compose-opensearch.yml", '"127.0.0.1:9200:9200"', '"9200:9200"', "loopback only"),
]


def selftest(src):
    for check, f, old, new, expect in MUTATIONS:
        with tempfile.TemporaryDirectory() as t:
            for d in ("logstash-pipelines",):
                shutil.copytree(os.path.join(src, d), os.path.join(t, d))
            for name in COMPOSE_FILES + (".env.example", "Dockerfile"):
                if os.path.exists(os.path.join(src, name)):
                    shutil.copy(os.path.join(src, name), t)
            for d in ("dashboards/grafana",):  # mounted by docker-compose.yml
                shutil.copytree(os.path.join(src, d), os.path.join(t, d))
            p = os.path.join(t, f)
            text = open(p).read()
            if not ok(old in text, f"selftest: {f} contains {old!r} to mutate"):
                continue
            open(p, "w").write(text.replace(old, new, 1))
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--source", t, check],
                               capture_output=True, text=True)
            ok(r.returncode == 1 and expect in r.stdout,
               f"selftest: {check} fails on {f}: {old!r} -> {new!r} with '{expect}' (rc {r.returncode})\n{r.stdout[-1500:]}")
            print(f"selftest: {check}: {f}: {old[:50]!r} -> {new[:50]!r}: rc {r.returncode}, "
                  + next((line[:160] for line in r.stdout.splitlines() if expect in line), "(expected message missing)"))
    print(f"selftest: {len(MUTATIONS)} mutations")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("check", choices=["compose", "shell", "logstash", "opensearch", "selftest"])
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    {"compose": lambda: check_compose(src),
     "shell": lambda: check_shell(src),
     "logstash": lambda: check_logstash(src),
     "opensearch": lambda: check_opensearch(src),
     "selftest": lambda: selftest(src)}[a.check]()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
