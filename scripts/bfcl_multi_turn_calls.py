#!/usr/bin/env python3
"""Converts BFCL's multi-turn ground truth (Python call strings) to JSON arguments.

Usage: bfcl_multi_turn_calls.py BFCL_DIR   (the unpacked bfcl-eval wheel, e.g. .peers/bfcl)

BFCL stores the ground truth of its multi-turn categories as lists (one per turn) of Python call
strings such as "mv(source='a.pdf', destination='temp')" or "sort('final_report.pdf')", which its
checker executes with `eval` against instances of the classes named in the entry's
`involved_classes` (bfcl_eval/eval_checker/multi_turn_eval/multi_turn_utils.py). This script
parses each string with `ast` (never evaluates it): the callee must be a plain name and every
argument a literal (`ast.literal_eval`). Positional arguments are named after the parameters of
the method BFCL would call, read from the class in
bfcl_eval/eval_checker/multi_turn_eval/func_source_code/ (skipping `self`). The function
definition a call belongs to is the one in the entry's involved classes, found through BFCL's own
MULTI_TURN_FUNC_DOC_FILE_MAPPING and CLASS_FILE_PATH_MAPPING
(bfcl_eval/constants/executable_backend_config.py).

Writes BFCL_DIR/multi_turn_calls.jsonl, one JSON object per call:
  {"id", "file", "turn", "step", "call", "doc", "name", "arguments"}
or, when a call cannot be converted, the same keys with "error" instead of "arguments".
"""

import ast
import glob
import json
import os
import sys


def literal_assignments(path):
    """Module-level `NAME = <literal or f-string dict>` assignments of a constants module."""
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    out = {}
    prefix = None
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if target.id == "BACKEND_PATH_PREFIX":
            prefix = ast.literal_eval(node.value)
        elif target.id in ("MULTI_TURN_FUNC_DOC_FILE_MAPPING", "CLASS_FILE_PATH_MAPPING"):
            mapping = {}
            for k, v in zip(node.value.keys, node.value.values):
                key = ast.literal_eval(k)
                if isinstance(v, ast.JoinedStr):  # f"{BACKEND_PATH_PREFIX}.module"
                    text = "".join(
                        prefix if isinstance(p, ast.FormattedValue) else p.value
                        for p in v.values
                    )
                else:
                    text = ast.literal_eval(v)
                mapping[key] = text
            out[target.id] = mapping
    return out


def class_methods(source_dir):
    """{class name: {"bases": [names], "methods": {method: [positional parameter names]}}}."""
    classes = {}
    for path in sorted(glob.glob(os.path.join(source_dir, "*.py"))):
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    params = [a.arg for a in item.args.posonlyargs + item.args.args]
                    methods[item.name] = params[1:]  # without `self`
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            classes[node.name] = {"bases": bases, "methods": methods}
    return classes


def find_method(classes, cls, name):
    seen = set()
    while cls in classes and cls not in seen:
        seen.add(cls)
        if name in classes[cls]["methods"]:
            return classes[cls]["methods"][name]
        bases = classes[cls]["bases"]
        cls = bases[0] if bases else None
    return None


def convert(call, involved, classes, doc_files, doc_names):
    """(doc file, name, arguments) for one call string; raises ValueError when it cannot."""
    tree = ast.parse(call, mode="eval").body
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name):
        raise ValueError("not a call of a plain function name")
    name = tree.func.id
    for cls in involved:
        doc = doc_files.get(cls)
        if doc is None or name not in doc_names.get(doc, ()):
            continue
        params = find_method(classes, cls, name)
        if params is None:
            raise ValueError(f"`{name}` is not a method of {cls} in BFCL's source")
        if len(tree.args) > len(params):
            raise ValueError(f"{len(tree.args)} positional arguments for {params}")
        args = {}
        for param, node in zip(params, tree.args):
            args[param] = ast.literal_eval(node)
        for kw in tree.keywords:
            if kw.arg is None:
                raise ValueError("`**kwargs` in a ground-truth call")
            args[kw.arg] = ast.literal_eval(kw.value)
        return doc, name, args
    raise ValueError(f"`{name}` is in none of the involved classes {involved}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "bfcl_eval")
    data = os.path.join(root, "data")
    consts = literal_assignments(os.path.join(root, "constants", "executable_backend_config.py"))
    doc_files = consts["MULTI_TURN_FUNC_DOC_FILE_MAPPING"]
    classes = class_methods(os.path.join(root, "eval_checker", "multi_turn_eval", "func_source_code"))
    doc_names = {}
    for doc in set(doc_files.values()):
        with open(os.path.join(data, "multi_turn_func_doc", doc), encoding="utf-8") as f:
            doc_names[doc] = {json.loads(line)["name"] for line in f if line.strip()}

    out_path = os.path.join(sys.argv[1], "multi_turn_calls.jsonl")
    calls = errors = 0
    with open(out_path + ".tmp", "w", encoding="utf-8") as out:
        for answers in sorted(glob.glob(os.path.join(data, "possible_answer", "BFCL_v4_multi_turn_*.json"))):
            file = os.path.basename(answers)
            with open(os.path.join(data, file), encoding="utf-8") as f:
                involved = {}
                for line in f:
                    if line.strip():
                        entry = json.loads(line)
                        involved[entry["id"]] = entry["involved_classes"]
            with open(answers, encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        continue
                    entry = json.loads(line)
                    for turn, turn_calls in enumerate(entry["ground_truth"]):
                        for step, call in enumerate(turn_calls):
                            row = {"id": entry["id"], "file": file, "turn": turn, "step": step, "call": call}
                            try:
                                doc, name, args = convert(
                                    call, involved[entry["id"]], classes, doc_files, doc_names
                                )
                                row.update(doc=doc, name=name, arguments=args)
                            except (ValueError, SyntaxError) as e:
                                row["error"] = str(e)
                                errors += 1
                            calls += 1
                            out.write(json.dumps(row) + "\n")
    os.replace(out_path + ".tmp", out_path)
    print(f"bfcl_multi_turn_calls: {calls} calls, {errors} not convertible -> {out_path}")


if __name__ == "__main__":
    main()
