#!/usr/bin/env python3
"""Kubernetes' OpenAPI definitions and CRDs -> kubeconform's per-kind JSON schemas, offline.

kubeconform looks schemas up by kind and apiVersion; by default it downloads them, which this
project's machines cannot. This writes the same files from sources the Go module proxy serves:

  k8s_schemas.py OUT --swagger k8s.io/kubernetes@vX/api/openapi-spec/swagger.json \
                     --crd keda.sh_scaledobjects.yaml --crd ...

One file per kind, named as kubeconform's `{{.ResourceKind}}{{.KindSuffix}}.json` expects:
`deployment-apps-v1.json`, `service-v1.json`, `servicemonitor-monitoring-v1.json`,
`scaledobject-keda-v1alpha1.json` (kind lowercased, then the first label of the group, then
the version). Like openapi2jsonschema's "standalone-strict" output: every object schema that
lists its properties gets `additionalProperties: false` (a misspelled field is an error),
int-or-string fields accept both, and each file carries the definitions it refers to.
"""

import argparse
import copy
import json
import os
import sys

import yaml


def strictify(node, preserve=False):
    """Walks a schema: closes objects that list their properties, and widens int-or-string."""
    if isinstance(node, list):
        return [strictify(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("properties", "patternProperties", "definitions", "$defs"):
            out[k] = {name: strictify(s) for name, s in v.items()}
        elif k in ("enum", "required", "example", "default", "x-kubernetes-list-map-keys"):
            out[k] = v  # data, not schemas
        else:
            out[k] = strictify(v)
    int_or_string = out.get("format") == "int-or-string" or out.get("x-kubernetes-int-or-string")
    if int_or_string:
        for k in ("type", "format", "anyOf", "oneOf"):
            out.pop(k, None)
        out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
    open_object = out.get("x-kubernetes-preserve-unknown-fields") or preserve
    if "properties" in out and "additionalProperties" not in out and not open_object:
        out["additionalProperties"] = False
    return out


def refs_of(node, found):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            found.add(ref[len("#/definitions/"):])
        for v in node.values():
            refs_of(v, found)
    elif isinstance(node, list):
        for v in node:
            refs_of(v, found)


def file_name(kind, group, version):
    suffix = "-" + (group.split(".")[0].lower() if group else version.lower())
    if group:
        suffix += "-" + version.lower()
    return f"{kind.lower()}{suffix}.json"


def write(out_dir, name, schema):
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump(schema, f, separators=(",", ":"))


def from_swagger(path, out_dir):
    with open(path) as f:
        definitions = json.load(f)["definitions"]
    # Quantities are strings in the spec, but `cpu: 1` is a valid manifest.
    quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"
    if quantity in definitions:
        definitions[quantity] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    strict = {name: strictify(d) for name, d in definitions.items()}
    written = 0
    for name, d in definitions.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            # Only definitions whose apiVersion/kind fields say they are top-level objects.
            if "kind" not in d.get("properties", {}):
                continue
            needed, todo = set(), [name]
            while todo:
                n = todo.pop()
                if n in needed:
                    continue
                needed.add(n)
                found = set()
                refs_of(strict[n], found)
                todo.extend(found - needed)
            schema = copy.deepcopy(strict[name])
            schema["$schema"] = "http://json-schema.org/draft-07/schema#"
            schema["definitions"] = {n: strict[n] for n in sorted(needed)}
            write(out_dir, file_name(gvk["kind"], gvk["group"], gvk["version"]), schema)
            written += 1
    return written


def from_crd(path, out_dir):
    written = 0
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                schema = version.get("schema", {}).get("openAPIV3Schema")
                if not schema:
                    continue
                schema = strictify(schema)
                props = schema.setdefault("properties", {})
                props.setdefault("apiVersion", {"type": "string"})
                props.setdefault("kind", {"type": "string"})
                props.setdefault("metadata", {"type": "object"})
                schema["$schema"] = "http://json-schema.org/draft-07/schema#"
                write(out_dir, file_name(spec["names"]["kind"], spec["group"], version["name"]), schema)
                written += 1
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--swagger", help="Kubernetes' api/openapi-spec/swagger.json")
    ap.add_argument("--crd", action="append", default=[], help="a CRD YAML file (repeatable)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    n = from_swagger(args.swagger, args.out_dir) if args.swagger else 0
    for crd in args.crd:
        n += from_crd(crd, args.out_dir)
    print(f"k8s_schemas: {n} schemas in {args.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
