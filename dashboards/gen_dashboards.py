#!/usr/bin/env python3
"""Writes iosonar's Kibana and Grafana dashboards (the committed files under
dashboards/ are this script's output; edit here, rerun, commit both):

  dashboards/kibana/iosonar-job-io.ndjson        "iosonar — job I/O"  (application users)
  dashboards/kibana/iosonar-file-system.ndjson   "iosonar — file system" (administrators)
  dashboards/grafana/dashboards/iosonar-file-system.json  (Elasticsearch data sources)
  dashboards/grafana/dashboards/iosonar-jobs.json         (MySQL job database)

usage: python3 dashboards/gen_dashboards.py [--source DIR] [--out DIR]

The Grafana jobs dashboard gets the cross-layer panels (xlayer server shares)
only when mysql-schema/ creates job_server_share and job_xlayer (migration 025,
`iosonar xlayer`): after that migration lands, rerun this script (the static
test "generated" says so).

Kibana: one dashboard saved object per file, Lens visualizations embedded by
value (Kibana 8.15 panel format), on the data views of iosonar-data-views.ndjson
(ids iosonar-logs, iosonar-metrics, iosonar-trace, iosonar-results). Every Lens
visualization restricts itself to one dataset with its query
(event.dataset : "..."), because the data views span several datasets; the
static test (test/static/check_es_artifacts.py dashboards) checks each field
against that dataset's Elasticsearch mapping.
"""
import argparse
import json
import os

DASH = "\u2014"  # em dash of the dashboard titles


# ------------------------------------------------------------------ Lens columns
def date_hist(cid="x"):
    return cid, {"label": "@timestamp", "dataType": "date", "operationType": "date_histogram",
                 "sourceField": "@timestamp", "isBucketed": True, "scale": "interval",
                 "params": {"interval": "auto", "includeEmptyRows": True, "dropPartials": False}}


def terms(cid, field, order_by, size=10, dtype="string", label=None, alphabetical=False):
    order = {"type": "alphabetical", "fallback": False} if alphabetical else {"type": "column", "columnId": order_by}
    return cid, {"label": label or f"Top values of {field}", "dataType": dtype, "operationType": "terms",
                 "sourceField": field, "isBucketed": True, "scale": "ordinal", "customLabel": label is not None,
                 "params": {"size": size, "orderBy": order, "orderDirection": "asc" if alphabetical else "desc",
                            "otherBucket": not alphabetical, "missingBucket": False,
                            "parentFormat": {"id": "terms"}}}


FORMATS = {"bytes": {"id": "bytes", "params": {"decimals": 1}},
           "bytes/s": {"id": "bytes", "params": {"decimals": 1, "suffix": "/s"}},
           "ns": {"id": "duration", "params": {"fromUnit": "nanoseconds", "toUnit": "humanize"}},
           "pct": {"id": "number", "params": {"decimals": 1, "suffix": "%"}},   # schema unit percent: 0..100
           "frac": {"id": "percent", "params": {"decimals": 1}},                # schema unit 1, a fraction 0..1
           "num": {"id": "number", "params": {"decimals": 2}}}


def metric(cid, op, field, label, fmt=None, dtype="number", **extra):
    params = {"emptyAsNull": True} if op in ("sum", "count") else {}
    if op == "last_value":
        params = {"sortField": "@timestamp", "showArrayValues": False}
    if op == "percentile":
        params = {"percentile": extra.pop("percentile")}
    if fmt:
        params["format"] = FORMATS[fmt]
    col = {"label": label, "customLabel": True, "dataType": dtype, "operationType": op,
           "sourceField": field, "isBucketed": False, "scale": "ratio", "params": params}
    if op == "last_value":
        col["filter"] = {"query": f"{field}: *", "language": "kuery"}
    col.update(extra)
    return cid, col


def count(cid="n", label="Records"):
    return cid, {"label": label, "customLabel": True, "dataType": "number", "operationType": "count",
                 "sourceField": "___records", "isBucketed": False, "scale": "ratio", "params": {"emptyAsNull": True}}


# ------------------------------------------------------------- Lens visualizations
def lens(title, dataview, dataset, columns, vis, vtype, extra_query="", ignore_global=False):
    """One by-value Lens visualization over one data view, one layer, one dataset.
    ignore_global: the layer ignores the dashboard's filters and controls (for datasets
    without the control's field, which a selection would otherwise empty)."""
    q = f'event.dataset : "{dataset}"' + (f" and {extra_query}" if extra_query else "")
    cols = dict(columns)
    return {
        "title": title, "description": "", "visualizationType": vtype, "type": "lens",
        "references": [{"type": "index-pattern", "id": dataview, "name": "indexpattern-datasource-layer-layer1"}],
        "state": {
            "visualization": vis,
            "query": {"query": q, "language": "kuery"},
            "filters": [],
            "datasourceStates": {"formBased": {"layers": {"layer1": {
                "columns": cols, "columnOrder": [c for c, _ in columns], "incompleteColumns": {}, "sampling": 1,
                "indexPatternId": dataview, "ignoreGlobalFilters": ignore_global}}}},
            "internalReferences": [], "adHocDataViews": {},
        },
    }


def xy(series, x, ys, split=None, legend="right"):
    layer = {"layerId": "layer1", "layerType": "data", "seriesType": series, "xAccessor": x,
             "accessors": ys, "position": "top", "showGridlines": False}
    if split:
        layer["splitAccessor"] = split
    return {"legend": {"isVisible": True, "position": legend}, "valueLabels": "hide", "fittingFunction": "None",
            "preferredSeriesType": series, "layers": [layer],
            "axisTitlesVisibilitySettings": {"x": True, "yLeft": True, "yRight": True},
            "tickLabelsVisibilitySettings": {"x": True, "yLeft": True, "yRight": True},
            "gridlinesVisibilitySettings": {"x": True, "yLeft": True, "yRight": True}}


def table(cols):
    return {"layerId": "layer1", "layerType": "data", "columns": [{"columnId": c} for c, _ in cols]}


def xy_lens(title, dv, ds, series, x, ys, split=None, q="", ignore_global=False):
    cols = [x] + ([split] if split else []) + ys
    return lens(title, dv, ds, cols, xy(series, x[0], [c for c, _ in ys], split[0] if split else None), "lnsXY", q,
                ignore_global)


def table_lens(title, dv, ds, cols, q="", ignore_global=False):
    return lens(title, dv, ds, cols, table(cols), "lnsDatatable", q, ignore_global)


# ----------------------------------------------------------------- dashboard object
def dashboard(did, title, description, panels, controls, time_from="now-24h"):
    """panels: [(w, h, lens_attrs)], laid out left to right on a 48-column grid."""
    out, refs, x, y, row_h = [], [], 0, 0, 0
    for i, (w, h, attrs) in enumerate(panels, 1):
        if x + w > 48:
            x, y, row_h = 0, y + row_h, 0
        pid = f"p{i}"
        out.append({"type": "lens", "panelIndex": pid, "gridData": {"x": x, "y": y, "w": w, "h": h, "i": pid},
                    "embeddableConfig": {"attributes": attrs, "enhancements": {}, "hidePanelTitles": False},
                    "title": attrs["title"]})
        for r in attrs["references"]:
            refs.append({"type": r["type"], "id": r["id"], "name": f"{pid}:{r['name']}"})
        x += w
        row_h = max(row_h, h)
    cpanels = {}
    for order, (cid, dv, field, label) in enumerate(controls):
        cpanels[cid] = {"order": order, "width": "medium", "grow": True, "type": "optionsListControl",
                        "explicitInput": {"id": cid, "dataViewId": dv, "fieldName": field, "title": label,
                                          "searchTechnique": "prefix", "selectedOptions": [], "singleSelect": False,
                                          "sort": {"by": "_count", "direction": "desc"}, "enhancements": {}}}
        refs.append({"type": "index-pattern", "id": dv, "name": f"controlGroup_{cid}:optionsListDataView"})
    return {
        "attributes": {
            "title": title, "description": description, "version": 1, "timeRestore": True,
            "timeFrom": time_from, "timeTo": "now", "refreshInterval": {"pause": False, "value": 60000},
            "optionsJSON": json.dumps({"useMargins": True, "syncColors": False, "syncCursor": True,
                                       "syncTooltips": False, "hidePanelTitles": False}),
            "panelsJSON": json.dumps(out, ensure_ascii=False),
            "controlGroupInput": {
                "chainingSystem": "HIERARCHICAL", "controlStyle": "oneLine", "showApplySelections": False,
                "ignoreParentSettingsJSON": json.dumps({"ignoreFilters": False, "ignoreQuery": False,
                                                        "ignoreTimerange": False, "ignoreValidations": False}),
                "panelsJSON": json.dumps(cpanels)},
            "kibanaSavedObjectMeta": {"searchSourceJSON": json.dumps(
                {"query": {"query": "", "language": "kuery"}, "filter": []})},
        },
        "coreMigrationVersion": "8.8.0", "typeMigrationVersion": "8.9.0",
        "id": did, "managed": False, "references": refs, "type": "dashboard",
    }


TRACE, LOGS, METRICS, RESULTS = "iosonar-trace", "iosonar-logs", "iosonar-metrics", "iosonar-results"


def job_io():
    T = "iosonar.trace"
    p = []
    p.append((32, 14, xy_lens("Bytes read and written over time (tracer)", TRACE, T, "bar_stacked", date_hist(),
                              [metric("b", "sum", "io.bytes", "Bytes", "bytes")],
                              terms("op", "io.op", "b", 2, label="Operation"), q='io.op : ("read" or "write")')))
    p.append((16, 14, xy_lens("Operations by op (tracer)", TRACE, T, "bar_horizontal",
                              terms("op", "io.op", "c", 15, label="Operation"),
                              [metric("c", "sum", "io.count", "Operations", "num")])))
    p.append((24, 14, xy_lens("I/O phases: bytes per phase over time", LOGS, "iosonar.result.phase", "bar_stacked",
                              date_hist(), [metric("b", "sum", "phase.bytes", "Bytes", "bytes")],
                              terms("d", "phase.direction", "b", 2, label="Direction"))))
    p.append((24, 14, table_lens("I/O phases", LOGS, "iosonar.result.phase", [
        terms("j", "job.id", "b", 10, label="Job"),
        terms("i", "phase.index", "b", 50, dtype="number", label="Phase", alphabetical=True),
        terms("d", "phase.direction", "b", 2, label="Direction"),
        metric("b", "sum", "phase.bytes", "Bytes", "bytes"),
        metric("t", "max", "phase.duration_ns", "Duration", "ns"),
        metric("m", "max", "phase.bw_mean", "Mean bandwidth", "bytes/s"),
        metric("k", "max", "phase.bw_peak", "Peak bandwidth", "bytes/s"),
        metric("w", "last_value", "phase.wavelet", "Wavelet", dtype="string")])))
    p.append((48, 12, table_lens("Job summary (summarize-job / job-summary)", RESULTS, "iosonar.result.job_summary", [
        terms("j", "job.id", "r", 20, label="Job"),
        metric("u", "last_value", "result.user", "User", dtype="string"),
        metric("a", "last_value", "result.app", "Application", dtype="string"),
        metric("f", "last_value", "result.fs", "File system", dtype="string"),
        metric("r", "max", "result.bytes_read", "Read", "bytes"),
        metric("w", "max", "result.bytes_written", "Written", "bytes"),
        metric("rb", "max", "result.read_bw", "Read bandwidth over the read I/O phases (Beacon 3.3)", "bytes/s"),
        metric("wb", "max", "result.write_bw", "Write bandwidth over the write I/O phases (Beacon 3.3)", "bytes/s"),
        metric("io", "max", "result.iops", "IOPS over the I/O phases (read + write)", "num"),
        metric("md", "max", "result.metadata_ops", "Metadata ops (count)", "num"),
        metric("mo", "last_value", "result.io_mode", "I/O mode", dtype="string"),
        metric("pr", "max", "result.processes", "Processes", "num"),
        metric("fi", "max", "result.files", "Files", "num"),
        metric("du", "max", "result.duration_ns", "Duration", "ns"),
        metric("ph", "max", "result.phases", "Phases", "num"),
        metric("of", "max", "result.ost_full_pct_max", "Fullest OST", "pct"),
        metric("oo", "max", "result.overloaded_oss", "Overloaded OSSes", "num")])))
    p.append((32, 14, table_lens("Top files by bytes (tracer)", TRACE, T, [
        terms("p", "file.path", "b", 20, label="File"),
        metric("b", "sum", "io.bytes", "Bytes", "bytes"),
        metric("c", "sum", "io.count", "Operations", "num"),
        metric("t", "sum", "io.duration_ns", "Time in I/O", "ns"),
        metric("r", "unique_count", "process.rank", "Ranks")])))
    p.append((16, 14, xy_lens("Time in I/O by op (tracer)", TRACE, T, "bar_horizontal",
                              terms("op", "io.op", "t", 15, label="Operation"),
                              [metric("t", "sum", "io.duration_ns", "Time in I/O", "ns")])))
    p.append((24, 12, table_lens("Cross-layer view (iosonar xlayer)", RESULTS, "iosonar.result.xlayer", [
        terms("j", "job.id", "b", 10, label="Job"),
        metric("b", "max", "xlayer.job_bytes", "Job bytes (all its files, node-local ones too)", "bytes"),
        metric("fb", "max", "xlayer.fs_bytes", "File system bytes over the job's window (all OSTs)", "bytes"),
        metric("cb", "max", "xlayer.coverage_bytes", "TOKIO coverage: job bytes on the file system / its bytes", "num"),
        metric("co", "max", "xlayer.coverage_opens", "TOKIO coverage: job opens on the file system / its opens", "num"),
        metric("n", "max", "xlayer.nodes", "Nodes", "num"),
        metric("f", "max", "xlayer.files", "Files", "num"),
        metric("os", "last_value", "xlayer.ost_source", "OST source", dtype="string")])))
    p.append((24, 12, table_lens("Servers the job used and its share of each (xlayer)", RESULTS,
                                 "iosonar.result.server_share", [
        terms("l", "share.layer", "s", 3, label="Layer"),
        terms("sv", "share.server", "s", 20, label="Server"),
        metric("s", "max", "share.fraction", "Job's share", "frac"),
        metric("jb", "max", "share.job_bytes", "Job bytes", "bytes"),
        metric("tb", "max", "share.total_bytes", "Server bytes", "bytes"),
        metric("e", "last_value", "share.estimated", "Estimated", dtype="boolean")])))
    return dashboard("iosonar-job-io", f"iosonar {DASH} job I/O",
                     "One job's I/O as the tracer saw it and as the analyses summarized it. Pick the job with "
                     "the Job control (job.id, all logs-iosonar.* datasets).",
                     p, [("ctl-job", LOGS, "job.id", "Job")], "now-7d")


def file_system():
    OSS, MDS, JS, H, P = "iosonar.oss", "iosonar.mds", "iosonar.jobstats", "iosonar.health", "iosonar.probe"
    p = []
    p.append((24, 14, xy_lens("OST read bandwidth per target", METRICS, OSS, "line", date_hist(),
                              [metric("r", "average", "oss.read_bytes_per_s", "Read", "bytes/s")],
                              terms("t", "lustre.target", "r", 10, label="OST"))))
    p.append((24, 14, xy_lens("OST write bandwidth per target", METRICS, OSS, "line", date_hist(),
                              [metric("w", "average", "oss.write_bytes_per_s", "Written", "bytes/s")],
                              terms("t", "lustre.target", "w", 10, label="OST"))))
    p.append((24, 16, xy_lens("Hot OSTs: bytes per target (read + written)", METRICS, OSS, "bar_horizontal_stacked",
                              terms("t", "lustre.target", "r", 20, label="OST"),
                              [metric("r", "sum", "oss.read_bytes", "Read", "bytes"),
                               metric("w", "sum", "oss.write_bytes", "Written", "bytes")])))
    p.append((24, 16, table_lens("Slow OSTs: ops and bytes per op", METRICS, OSS, [
        terms("t", "lustre.target", "o", 30, label="OST"),
        metric("o", "average", "oss.ops_per_s", "Ops/s", "num"),
        metric("rr", "average", "oss.read_bytes_per_s", "Read/s", "bytes/s"),
        metric("ww", "average", "oss.write_bytes_per_s", "Written/s", "bytes/s"),
        metric("ro", "sum", "oss.read_ops", "Read ops", "num"),
        metric("wo", "sum", "oss.write_ops", "Write ops", "num"),
        metric("ot", "sum", "oss.other_ops", "Other ops", "num")])))
    p.append((24, 14, xy_lens("MDS ops/s per MDT", METRICS, MDS, "line", date_hist(),
                              [metric("o", "average", "mds.ops_per_s", "Ops/s", "num")],
                              terms("t", "lustre.target", "o", 10, label="MDT"))))
    p.append((24, 14, table_lens("MDS op mix per MDT", METRICS, MDS, [
        terms("t", "lustre.target", "all", 10, label="MDT"),
        metric("all", "sum", "mds.ops", "All ops", "num"),
        metric("op", "sum", "mds.open", "open", "num"),
        metric("cl", "sum", "mds.close", "close", "num"),
        metric("ga", "sum", "mds.getattr", "getattr", "num"),
        metric("sa", "sum", "mds.setattr", "setattr", "num"),
        metric("mk", "sum", "mds.mknod", "mknod", "num"),
        metric("ul", "sum", "mds.unlink", "unlink", "num"),
        metric("md", "sum", "mds.mkdir", "mkdir", "num"),
        metric("rn", "sum", "mds.rename", "rename", "num"),
        metric("sf", "sum", "mds.statfs", "statfs", "num")])))
    p.append((48, 14, table_lens("Top jobs per OST (job_stats)", METRICS, JS, [
        terms("t", "lustre.target", "b", 20, label="Target"),
        terms("j", "job.id", "b", 5, label="Job"),
        metric("b", "sum", "oss.write_bytes", "Written", "bytes"),
        metric("r", "sum", "oss.read_bytes", "Read", "bytes"),
        metric("wo", "sum", "oss.write_ops", "Write ops", "num"),
        metric("ro", "sum", "oss.read_ops", "Read ops", "num"),
        metric("mo", "sum", "mds.ops", "Metadata ops", "num")])))
    p.append((24, 16, xy_lens("OST fullness (lfs df)", METRICS, H, "bar_horizontal",
                              terms("t", "lustre.target", "u", 30, label="OST"),
                              [metric("u", "max", "health.used_pct", "Used", "pct")],
                              q='health.record : "target" and health.target_kind : "ost"')))
    p.append((24, 16, table_lens("Overloaded OSSes (lctl dl -t)", METRICS, H, [
        terms("o", "health.oss", "f", 20, label="OSS"),
        metric("fs", "last_value", "lustre.fs", "File system", dtype="string"),
        metric("f", "max", "health.overload_factor", "Overload factor", "num"),
        metric("n", "max", "health.ost_count", "OSTs served", "num"),
        metric("tg", "last_value", "health.targets", "Targets", dtype="string")],
        q='health.record : "oss" and health.overloaded : true')))
    p.append((24, 14, xy_lens("Probe latency, 95th percentile per op", METRICS, P, "line", date_hist(),
                              [metric("l", "percentile", "probe.latency_ns", "p95 latency", "ns", percentile=95)],
                              terms("o", "probe.op", "l", 10, label="Probe op"))))
    p.append((24, 14, xy_lens("Probe failures per op", METRICS, P, "bar_stacked", date_hist(),
                              [count("n", "Failed probes")], terms("o", "probe.op", "n", 10, label="Probe op"),
                              q="probe.ok : false")))
    # LASSi: iosonar.result.risk holds file-system, application and job rows
    # (result.app / job.id set on the latter two); each panel takes one kind,
    # so no maximum mixes a file system's window with an application's.
    fs_rows = "not result.app : * and not job.id : *"
    p.append((24, 14, xy_lens("LASSi risk per file system: sum of its applications' risks per window "
                              "(LASSi Fig. 2; ignores the controls)", RESULTS,
                              "iosonar.result.risk", "line", date_hist(),
                              [metric("ro", "max", "result.risk_oss", "File-system risk_oss in the window", "num"),
                               metric("rm", "max", "result.risk_mds", "File-system risk_mds in the window", "num")],
                              terms("f", "result.fs", "ro", 5, label="File system"), q=fs_rows, ignore_global=True)))
    p.append((24, 14, table_lens("Riskiest applications (LASSi, per application window; ignores the controls)",
                                 RESULTS, "iosonar.result.risk", [
        terms("t", "result.app", "ro", 20, label="Application (command line)"),
        metric("fs", "last_value", "result.fs", "File system", dtype="string"),
        metric("ro", "max", "result.risk_oss", "Highest risk_oss of one application window", "num"),
        metric("rm", "max", "result.risk_mds", "Highest risk_mds of one application window", "num"),
        metric("rk", "max", "result.read_kb_ops", "Worst read ops per MiB (1 = 1 MiB requests)", "num"),
        metric("wk", "max", "result.write_kb_ops", "Worst write ops per MiB (1 = 1 MiB requests)", "num")],
        q="result.app : *", ignore_global=True)))
    p.append((24, 14, table_lens("Riskiest jobs (LASSi, per job window; ignores the controls)",
                                 RESULTS, "iosonar.result.risk", [
        terms("t", "job.id", "ro", 20, label="Job"),
        metric("fs", "last_value", "result.fs", "File system", dtype="string"),
        metric("ro", "max", "result.risk_oss", "Highest risk_oss of one job window", "num"),
        metric("rm", "max", "result.risk_mds", "Highest risk_mds of one job window", "num"),
        metric("rk", "max", "result.read_kb_ops", "Worst read ops per MiB (1 = 1 MiB requests)", "num"),
        metric("wk", "max", "result.write_kb_ops", "Worst write ops per MiB (1 = 1 MiB requests)", "num")],
        q="job.id : *", ignore_global=True)))
    p.append((48, 14, table_lens("bad-ost: OSTs whose files were slow (ignores the controls)", LOGS,
                                 "iosonar.result.bad_ost", [
        terms("o", "badost.ost", "c", 30, label="OST", alphabetical=False),
        terms("j", "job.id", "c", 5, label="Job"),
        metric("c", "min", "badost.coefficient", "Pearson r", "num"),
        metric("pv", "min", "badost.p_value", "p-value", "num"),
        metric("fo", "max", "badost.files_on", "Files on OST", "num"),
        metric("fa", "max", "badost.files", "Files", "num"),
        metric("v", "last_value", "badost.verdict", "Verdict", dtype="string")], ignore_global=True)))
    p.append((24, 14, table_lens("Which jobs flood each OST (xlayer shares; ignores the controls)", RESULTS,
                                 "iosonar.result.server_share", [
        terms("sv", "share.server", "s", 20, label="OST"),
        terms("j", "job.id", "s", 5, label="Job"),
        metric("s", "max", "share.fraction", "Job's share", "frac"),
        metric("jb", "max", "share.job_bytes", "Job bytes", "bytes"),
        metric("tb", "max", "share.total_bytes", "OST bytes", "bytes"),
        metric("e", "last_value", "share.estimated", "Estimated from layouts", dtype="boolean")],
        q='share.layer : "ost"', ignore_global=True)))
    p.append((24, 14, table_lens("Scoreboard: top users and applications by bytes (ignores the controls)", RESULTS,
                                 "iosonar.result.scoreboard", [
        terms("w", "scoreboard.who", "b", 2, label="Who"),
        terms("n", "scoreboard.name", "b", 10, label="Name"),
        metric("b", "max", "scoreboard.write_bytes", "Written", "bytes"),
        metric("r", "max", "scoreboard.read_bytes", "Read", "bytes"),
        metric("mo", "max", "scoreboard.meta_ops", "Metadata ops", "num"),
        metric("jo", "max", "scoreboard.jobs", "Jobs", "num")],
        q='scoreboard.metric : "bytes"', ignore_global=True)))
    p.append((48, 14, table_lens("Anomalies: occurrences, lagging servers, anomalous jobs and their neighbours "
                                 "(iosonar screen / anomaly; ignores the controls)", LOGS, "iosonar.result.anomaly", [
        terms("a", "result.analysis", "sc", 5, label="What"),
        terms("t", "result.target", "sc", 20, label="Server or neighbour"),
        terms("j", "job.id", "sc", 10, label="Job"),
        metric("sc", "max", "result.score", "Score (bandwidth ratio, slowdown)", "num"),
        metric("d", "max", "result.interval_ns", "Duration (ns)", "num"),
        metric("r", "last_value", "result.reason", "Reason", dtype="string")],
        q='result.analysis : ("occurrence" or "ost" or "forwarding" or "neighbour" or "job")', ignore_global=True)))
    return dashboard("iosonar-file-system", f"iosonar {DASH} file system",
                     "Lustre servers as the exporters see them: OST bandwidth per target (the hot or slow OST), "
                     "MDS ops, the jobs behind them, fullness and overloaded OSSes, probe latency, LASSi risk "
                     "and bad-ost results.",
                     p, [("ctl-fs", METRICS, "lustre.fs", "File system")])


# ------------------------------------------------------------------------ Grafana
def g_panel(pid, title, ptype, ds_uid, ds_type, targets, x, y, w, h, unit=None, extra=None):
    p = {"id": pid, "title": title, "type": ptype, "gridPos": {"x": x, "y": y, "w": w, "h": h},
         "datasource": {"type": ds_type, "uid": ds_uid}, "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit} if unit else {}, "overrides": []}, "options": {}}
    if extra:
        p.update(extra)
    return p


def es_target(ref, query, metrics, buckets, alias=""):
    return {"refId": ref, "datasource": {"type": "elasticsearch", "uid": "iosonar-sampler"},
            "query": query, "alias": alias, "metrics": metrics, "bucketAggs": buckets, "timeField": "@timestamp"}


def es_series(field, size=10, order_by="1"):
    return [{"id": "2", "type": "terms", "field": "lustre.target" if field is None else field,
             "settings": {"size": str(size), "order": "asc" if order_by == "_term" else "desc", "orderBy": order_by,
                          "min_doc_count": "1"}},
            {"id": "3", "type": "date_histogram", "field": "@timestamp",
             "settings": {"interval": "auto", "min_doc_count": "0", "trimEdges": "0"}}]


def grafana_fs():
    fsq = ' AND lustre.fs:$fs'
    p = []
    p.append(g_panel(1, "OST read bandwidth per target", "timeseries", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.oss"' + fsq,
                                [{"id": "1", "type": "avg", "field": "oss.read_bytes_per_s"}], es_series(None))],
                     0, 0, 12, 9, "Bps"))
    p.append(g_panel(2, "OST write bandwidth per target", "timeseries", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.oss"' + fsq,
                                [{"id": "1", "type": "avg", "field": "oss.write_bytes_per_s"}], es_series(None))],
                     12, 0, 12, 9, "Bps"))
    p.append(g_panel(3, "OST ops/s per target", "timeseries", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.oss"' + fsq,
                                [{"id": "1", "type": "avg", "field": "oss.ops_per_s"}], es_series(None))],
                     0, 9, 12, 9, "ops"))
    p.append(g_panel(4, "MDS ops/s per MDT", "timeseries", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.mds"' + fsq,
                                [{"id": "1", "type": "avg", "field": "mds.ops_per_s"}], es_series(None))],
                     12, 9, 12, 9, "ops"))
    p.append(g_panel(5, "Probe latency per op (median and p95)", "timeseries", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.probe"' + fsq,
                                [{"id": "1", "type": "percentiles", "field": "probe.latency_ns",
                                  "settings": {"percents": ["50", "95"]}}], es_series("probe.op", order_by="_term"))],
                     0, 18, 12, 9, "ns"))
    p.append(g_panel(6, "OST fullness", "bargauge", "iosonar-sampler", "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.health" AND health.record:"target" AND '
                                     'health.target_kind:"ost"' + fsq,
                                [{"id": "1", "type": "max", "field": "health.used_pct"}],
                                [{"id": "2", "type": "terms", "field": "lustre.target",
                                  "settings": {"size": "50", "order": "desc", "orderBy": "1", "min_doc_count": "1"}}])],
                     12, 18, 12, 9, "percent",
                     {"options": {"orientation": "horizontal", "displayMode": "gradient",
                                  "reduceOptions": {"calcs": ["lastNotNull"], "values": True}}}))
    p.append(g_panel(7, "Top jobs per OST (job_stats, bytes written and read)", "table", "iosonar-sampler",
                     "elasticsearch",
                     [es_target("A", 'event.dataset:"iosonar.jobstats"' + fsq,
                                [{"id": "1", "type": "sum", "field": "oss.write_bytes"},
                                 {"id": "4", "type": "sum", "field": "oss.read_bytes"}],
                                [{"id": "2", "type": "terms", "field": "lustre.target",
                                  "settings": {"size": "20", "order": "desc", "orderBy": "1", "min_doc_count": "1"}},
                                 {"id": "3", "type": "terms", "field": "job.id",
                                  "settings": {"size": "5", "order": "desc", "orderBy": "1", "min_doc_count": "1"}}])],
                     0, 27, 24, 10, "bytes"))
    return {
        "uid": "iosonar-file-system", "title": f"iosonar {DASH} file system", "tags": ["iosonar", "lustre"],
        "schemaVersion": 39, "version": 1, "editable": True, "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"}, "timepicker": {},
        "templating": {"list": [{
            "name": "fs", "label": "File system", "type": "query",
            "datasource": {"type": "elasticsearch", "uid": "iosonar-sampler"},
            "query": json.dumps({"find": "terms", "field": "lustre.fs", "query": 'event.dataset:"iosonar.oss"'}),
            "includeAll": True, "multi": True, "allValue": "*", "refresh": 2,
            "current": {"text": "All", "value": "$__all"}}]},
        "annotations": {"list": []}, "panels": p,
    }


def sql_target(ref, sql, fmt="table"):
    return {"refId": ref, "datasource": {"type": "mysql", "uid": "iosonar-mysql"}, "format": fmt,
            "rawQuery": True, "editorMode": "code", "rawSql": sql}


def sql_tables(src):
    """Names of the tables mysql-schema/*.sql creates (to add panels for tables that exist)."""
    import re
    names = set()
    d = os.path.join(src, "mysql-schema")
    for f in sorted(os.listdir(d)):
        if f.endswith(".sql"):
            names |= {n.lower() for n in re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)",
                                                     open(os.path.join(d, f)).read(), re.I)}
    return names


def grafana_jobs(src):
    M = ("iosonar-mysql", "mysql")
    xlayer = {"job_server_share", "job_xlayer"} <= sql_tables(src)
    p = []
    p.append(g_panel(1, "Jobs started per hour by state", "timeseries", *M, [sql_target("A", (
        "SELECT $__timeGroupAlias(j.start_time, '1h'), j.state AS metric, COUNT(*) AS jobs\n"
        "FROM jobs j\nWHERE j.step = '' AND j.cluster IN ($cluster) AND $__timeFilter(j.start_time)\n"
        "GROUP BY 1, 2\nORDER BY 1"), "time_series")], 0, 0, 24, 8, "short",
        {"options": {"legend": {"displayMode": "list", "placement": "right"}},
         "fieldConfig": {"defaults": {"custom": {"drawStyle": "bars", "stacking": {"mode": "normal"}}},
                         "overrides": []}}))
    p.append(g_panel(2, "Recent jobs and their I/O (job-summary)", "table", *M, [sql_target("A", (
        "SELECT j.cluster, j.job_id, j.user_name, j.account, j.partition_name,\n"
        "       CAST(j.job_name AS CHAR) AS job_name, j.node_count, j.start_time, j.end_time, j.state, j.exit_code,\n"
        "       s.runtime_s, s.read_bytes, s.write_bytes, s.read_bw_avg, s.write_bw_avg, s.read_iops, s.write_iops,\n"
        "       s.meta_ops, s.files, s.errors, s.io_mode_read, s.io_mode_write\n"
        "FROM jobs j LEFT JOIN job_summary s ON s.cluster = j.cluster AND s.job_id = j.job_id\n"
        "WHERE j.step = '' AND j.cluster IN ($cluster) AND $__timeFilter(j.start_time)\n"
        "ORDER BY j.start_time DESC\nLIMIT 500"))], 0, 8, 24, 10, None,
        {"fieldConfig": {"defaults": {}, "overrides": [
            {"matcher": {"id": "byRegexp", "options": "read_bytes|write_bytes"},
             "properties": [{"id": "unit", "value": "bytes"}]},
            {"matcher": {"id": "byRegexp", "options": "read_bw_avg|write_bw_avg"},
             "properties": [{"id": "unit", "value": "Bps"}]}]}}))
    p.append(g_panel(3, "I/O phases of job $job_id (iosonar phases)", "table", *M, [sql_target("A", (
        "SELECT p.phase_no, p.direction, p.start_time, p.duration_s, p.bytes, p.bw_mean, p.bw_peak, p.wavelet,\n"
        "       p.computed_at\n"
        "FROM job_phases p\nWHERE p.cluster IN ($cluster) AND p.job_id = $job_id\nORDER BY p.phase_no"))],
        0, 18, 12, 9, None,
        {"fieldConfig": {"defaults": {}, "overrides": [
            {"matcher": {"id": "byName", "options": "bytes"}, "properties": [{"id": "unit", "value": "bytes"}]},
            {"matcher": {"id": "byRegexp", "options": "bw_mean|bw_peak"},
             "properties": [{"id": "unit", "value": "Bps"}]}]}}))
    p.append(g_panel(4, "TOKIO summary of job $job_id (summarize-job)", "table", *M, [sql_target("A", (
        "SELECT t.job_id, t.computed_at,\n"
        "       JSON_UNQUOTE(JSON_EXTRACT(t.row_json, '$.darshan_app')) AS app,\n"
        "       JSON_UNQUOTE(JSON_EXTRACT(t.row_json, '$._file_system')) AS file_system,\n"
        "       JSON_EXTRACT(t.row_json, '$.darshan_total_gibs_posix') AS gib_posix,\n"
        "       JSON_EXTRACT(t.row_json, '$.darshan_agg_perf_by_slowest_posix') AS agg_perf_gibs,\n"
        "       JSON_EXTRACT(t.row_json, '$.fshealth_ost_most_full_pct') AS ost_most_full_pct,\n"
        "       JSON_EXTRACT(t.row_json, '$.fshealth_ost_overloaded_oss_count') AS overloaded_oss,\n"
        "       JSON_EXTRACT(t.row_json, '$.iosonar_coverage_factor_bw') AS coverage_job_fs_bytes_over_fs_bytes\n"
        "FROM job_tokio_summary t\nWHERE t.cluster IN ($cluster) AND t.job_id = $job_id"))],
        12, 18, 12, 9))
    p.append(g_panel(5, "Users: jobs, node-hours and I/O", "table", *M, [sql_target("A", (
        "SELECT u.cluster, u.user_name, u.jobs, u.completed, u.not_completed, u.node_hours, u.summarized,\n"
        "       u.read_bytes, u.write_bytes, u.meta_ops\n"
        "FROM user_stats u\nWHERE u.cluster IN ($cluster)\nORDER BY u.node_hours DESC\nLIMIT 50"))],
        0, 27, 12, 9))
    p.append(g_panel(6, "Riskiest jobs (LASSi, iosonar lassi)", "table", *M, [sql_target("A", (
        "SELECT r.target AS job_id, r.fs, MAX(r.risk_oss) AS highest_window_risk_oss,\n"
        "       MAX(r.risk_mds) AS highest_window_risk_mds,\n"
        "       MAX(r.read_kb_ops) AS worst_read_ops_per_mib, MAX(r.write_kb_ops) AS worst_write_ops_per_mib\n"
        "FROM lassi_risk r\nWHERE r.kind = 'job' AND $__timeFilter(r.window_start)\n"
        "GROUP BY r.target, r.fs\nORDER BY highest_window_risk_oss DESC\nLIMIT 50"))],
        12, 27, 12, 9))
    if xlayer:
        p.append(g_panel(7, "Which jobs flood each OST (iosonar xlayer server shares)", "table", *M, [sql_target("A", (
            "SELECT x.server, x.cluster, x.job_id, x.share, x.job_bytes, x.total_bytes, x.window_start,\n"
            "       x.window_end, x.estimated\n"
            "FROM job_server_share x\n"
            "WHERE x.layer = 'ost' AND x.cluster IN ($cluster)\n"
            "  AND x.window_start < $__timeTo() AND x.window_end > $__timeFrom()\n"
            "ORDER BY x.share DESC\nLIMIT 200"))], 0, 36, 12, 10, None,
            {"fieldConfig": {"defaults": {}, "overrides": [
                {"matcher": {"id": "byName", "options": "share"}, "properties": [{"id": "unit", "value": "percentunit"}]},
                {"matcher": {"id": "byRegexp", "options": "job_bytes|total_bytes"},
                 "properties": [{"id": "unit", "value": "bytes"}]}]}}))
        p.append(g_panel(8, "Servers job $job_id used and its share of each (xlayer)", "table", *M, [sql_target("A", (
            "SELECT x.layer, x.server, x.share, x.job_bytes, x.total_bytes, x.job_ops, x.total_ops,\n"
            "       x.in_flight_mean, x.estimated\n"
            "FROM job_server_share x\nWHERE x.cluster IN ($cluster) AND x.job_id = $job_id\n"
            "ORDER BY x.layer, x.share DESC"))], 12, 36, 12, 10, None,
            {"fieldConfig": {"defaults": {}, "overrides": [
                {"matcher": {"id": "byName", "options": "share"}, "properties": [{"id": "unit", "value": "percentunit"}]}]}}))
        p.append(g_panel(9, "Cross-layer coverage of job $job_id (xlayer)", "table", *M, [sql_target("A", (
            "SELECT v.job_id, v.window_start, v.window_end, v.window_source, v.nodes, v.unmapped_nodes, v.files,\n"
            "       v.job_bytes, v.fs_bytes, v.coverage_bytes, v.coverage_opens, v.coverage_stats, v.ost_source\n"
            "FROM job_xlayer v\nWHERE v.cluster IN ($cluster) AND v.job_id = $job_id"))], 0, 46, 24, 6))
    if {"job_anomaly", "server_anomaly"} <= sql_tables(src):  # migration 035 (iosonar anomaly / screen)
        p.append(g_panel(10, "Anomalous jobs and their first neighbour (iosonar anomaly)", "table", *M, [sql_target("A", (
            "SELECT a.cluster, a.job_id, a.verdict, a.history_runs, a.slowdown, a.computed_at,\n"
            "       n.neighbour, n.evidence, n.shared, n.md_ops_per_s\n"
            "FROM job_anomaly a LEFT JOIN job_anomaly_neighbour n\n"
            "  ON n.cluster = a.cluster AND n.job_id = a.job_id AND n.rank_no = 0\n"
            "WHERE a.cluster IN ($cluster) AND a.verdict = 'anomalous' AND $__timeFilter(a.computed_at)\n"
            "ORDER BY a.computed_at DESC\nLIMIT 200"))], 0, 52, 12, 10))
        p.append(g_panel(11, "Open server anomalies (iosonar screen: under 30 % of peak for an hour or more)", "table", *M,
            [sql_target("A", (
                "SELECT s.kind, s.server, s.start_time, s.end_time, s.duration_s, s.max_bw_ratio, s.alerted_at\n"
                "FROM server_anomaly s\nWHERE s.still_open = 1\nORDER BY s.duration_s DESC\nLIMIT 200"))],
            12, 52, 12, 10, None,
            {"fieldConfig": {"defaults": {}, "overrides": [
                {"matcher": {"id": "byName", "options": "duration_s"}, "properties": [{"id": "unit", "value": "s"}]},
                {"matcher": {"id": "byName", "options": "max_bw_ratio"},
                 "properties": [{"id": "unit", "value": "percentunit"}]}]}}))
    job_q = ("SELECT p.job_id FROM job_phases p WHERE p.cluster IN ($cluster) "
             "UNION SELECT t.job_id FROM job_tokio_summary t WHERE t.cluster IN ($cluster) "
             + ("UNION SELECT v.job_id FROM job_xlayer v WHERE v.cluster IN ($cluster) " if xlayer else "")
             + "ORDER BY 1 DESC LIMIT 500")
    return {
        "uid": "iosonar-jobs", "title": f"iosonar {DASH} jobs", "tags": ["iosonar", "jobs"],
        "schemaVersion": 39, "version": 1, "editable": True, "refresh": "",
        "time": {"from": "now-7d", "to": "now"}, "timepicker": {},
        "templating": {"list": [
            {"name": "cluster", "label": "Cluster", "type": "query",
             "datasource": {"type": "mysql", "uid": "iosonar-mysql"},
             "query": "SELECT DISTINCT j.cluster FROM jobs j", "definition": "SELECT DISTINCT j.cluster FROM jobs j",
             "includeAll": True, "multi": True, "refresh": 1, "current": {"text": "All", "value": "$__all"}},
            {"name": "job_id", "label": "Job", "type": "query",
             "datasource": {"type": "mysql", "uid": "iosonar-mysql"},
             "query": job_q,
             "includeAll": False, "multi": False, "refresh": 1}]},
        "annotations": {"list": []}, "panels": p,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the repository (mysql-schema/ is read from here)")
    ap.add_argument("--out", help="write under OUT/dashboards instead of SOURCE/dashboards")
    a = ap.parse_args()
    d = os.path.join(a.out or a.source, "dashboards")
    for name, obj in (("iosonar-job-io.ndjson", job_io()), ("iosonar-file-system.ndjson", file_system())):
        os.makedirs(os.path.join(d, "kibana"), exist_ok=True)
        with open(os.path.join(d, "kibana", name), "w") as f:
            f.write(json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n")
    os.makedirs(os.path.join(d, "grafana", "dashboards"), exist_ok=True)
    for name, obj in (("iosonar-file-system.json", grafana_fs()), ("iosonar-jobs.json", grafana_jobs(a.source))):
        with open(os.path.join(d, "grafana", "dashboards", name), "w") as f:
            f.write(json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
