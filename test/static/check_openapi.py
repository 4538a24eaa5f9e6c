#!/usr/bin/env python3
"""Checks docs/openapi.yaml against `iosonar serve`:
  - every route the server has (`iosonar serve --print-routes`) is a path +
    method in the file, and every path + method in the file is a route;
  - each sample response (a file named GET_api_jobs_job... after the route,
    braces dropped, '/' as '_') is JSON with the properties the file declares
    as required for its 200 response (objects, and the items of arrays, one
    level into nested objects that are declared with required properties);
  - every route with a {job} declares the `cluster` query parameter, and the
    routes that may compute a result declare the 503 of a full queue.
usage: check_openapi.py OPENAPI.yaml ROUTES.txt SAMPLES_DIR"""
import json
import os
import sys

import yaml


def sample_name(route):
    method, path = route.split(" ", 1)
    return method + "_" + "_".join(p.strip("{}") for p in path.strip("/").split("/") if p)


def resolve(spec, schema):
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        node = spec
        for part in ref[2:].split("/"):
            node = node[part]
        schema = node
    return schema


def check(spec, schema, value, where, errors):
    schema = resolve(spec, schema)
    if not isinstance(schema, dict):
        return
    t = schema.get("type")
    if t == "array":
        if not isinstance(value, list):
            errors.append(f"{where}: expected an array")
            return
        for i, item in enumerate(value[:50]):
            check(spec, schema.get("items", {}), item, f"{where}[{i}]", errors)
    elif t == "object":
        if not isinstance(value, dict):
            errors.append(f"{where}: expected an object")
            return
        for k in schema.get("required", []):
            if k not in value:
                errors.append(f"{where}: missing required property '{k}'")
        for k, sub in schema.get("properties", {}).items():
            if k in value and value[k] is not None:
                check(spec, sub, value[k], f"{where}.{k}", errors)
    elif t in ("string", "integer", "number", "boolean") and value is not None:
        ok = {"string": isinstance(value, str), "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool),
              "boolean": isinstance(value, bool)}[t]
        if not ok:
            errors.append(f"{where}: expected {t}, got {type(value).__name__}")


def main():
    spec_path, routes_path, samples = sys.argv[1:4]
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    with open(routes_path) as f:
        routes = {line.strip() for line in f if line.strip()}
    documented = set()
    for path, ops in spec.get("paths", {}).items():
        for method in ops:
            if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                documented.add(method.upper() + " " + path)
    errors = []
    for r in sorted(routes - documented):
        errors.append(f"route {r} is not in {spec_path}")
    for r in sorted(documented - routes):
        errors.append(f"{spec_path} documents {r}, which the server does not have")
    # Job routes take ?cluster= (job ids repeat across Slurm clusters); the
    # routes that may compute declare the 503 of a full worker queue.
    computing = {"/api/jobs/{job}", "/api/jobs/{job}/series", "/api/jobs/{job}/phases", "/api/jobs/{job}/advice",
                 "/api/admin/heatmap", "/api/admin/lassi", "/api/admin/jobs/{job}/osts", "/jobs/{job}", "/admin"}
    for r in sorted(routes & documented):
        method, path = r.split(" ", 1)
        op = spec["paths"][path][method.lower()]
        names = {resolve(spec, p).get("name") + "@" + resolve(spec, p).get("in") for p in op.get("parameters", [])}
        if "{job}" in path and "cluster@query" not in names:
            errors.append(f"{r}: the cluster query parameter is not declared")
        if path in computing and "503" not in op.get("responses", {}):
            errors.append(f"{r}: the 503 of a full computation queue is not declared")
    checked = 0
    for r in sorted(routes & documented):
        method, path = r.split(" ", 1)
        f = os.path.join(samples, sample_name(r))
        if not os.path.exists(f):
            continue
        op = spec["paths"][path][method.lower()]
        content = op["responses"]["200"].get("content", {})
        if "application/json" not in content:
            errors.append(f"{r}: the 200 response is not declared as application/json")
            continue
        with open(f) as fh:
            value = json.load(fh)
        check(spec, content["application/json"]["schema"], value, r, errors)
        checked += 1
    if checked == 0:
        errors.append("no sample response was checked")
    for e in errors:
        print(e)
    print(f"{len(routes)} routes, {len(documented)} documented, {checked} samples checked, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
