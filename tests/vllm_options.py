"""The `vllm serve` option table of a vLLM wheel, read from its source without importing it (no torch needed).

How the table in tests/data/vllm-0.33.0-serve-options.json was taken:

    pip download vllm==0.33.0 --no-deps -d /tmp/vllm
    uv run python tests/vllm_options.py /tmp/vllm/vllm-0.33.0-*.whl > tests/data/vllm-0.33.0-serve-options.json

It parses (with `ast`) `vllm/engine/arg_utils.py` (EngineArgs.add_cli_args: every `add_argument("--flag",
**<group>_kwargs["field"])`, where `<group>_kwargs = get_kwargs(<Config>)`), the config dataclasses of
`vllm/config/*.py` (each field's annotation decides the option's kind as vLLM's `get_kwargs` does: a bool
field is a BooleanOptionalAction flag, `bool | str | None` an optional-valued flag, a Literal a choice),
and the frontend dataclasses of `vllm/entrypoints/common/cli_args.py` (`--host`, `--port`, ...: every
field becomes `--<field-with-dashes>`). Boolean flags get their negative forms as vLLM's
FlexibleArgumentParser makes them: `--enable-x` <-> `--disable-x` (EnableDisableAction), else `--no-x`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

ARG_UTILS = "vllm/engine/arg_utils.py"
FRONTEND = "vllm/entrypoints/common/cli_args.py"


def _literal_values(node: ast.AST, aliases: dict[str, ast.AST], depth: int = 0) -> list[str] | None:
    """The strings a `Literal[...]` annotation (or an alias of one, or a union containing one) allows."""
    if depth > 8:
        return None
    if isinstance(node, ast.Name) and node.id in aliases:
        return _literal_values(aliases[node.id], aliases, depth + 1)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        values: list[str] = []
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                values.append(item.value)
            else:
                inner = _literal_values(item, aliases, depth + 1)
                if inner is None:
                    return None
                values.extend(inner)
        return values
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _literal_values(node.left, aliases, depth + 1)
        right = _literal_values(node.right, aliases, depth + 1)
        if left is not None or right is not None:
            return (left or []) + (right or [])
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _kind(annotation: ast.AST, aliases: dict[str, ast.AST]) -> dict[str, Any]:
    names = _names(annotation)
    if "bool" in names and names & {"str"} and not names - {"bool", "str", "None"}:
        return {"kind": "optional-value"}
    if "bool" in names and not names - {"bool", "None"}:
        return {"kind": "flag"}
    choices = _literal_values(annotation, aliases)
    if choices is not None and not names - {"Literal", "None", *aliases}:
        return {"kind": "choice", "choices": sorted(set(choices))}
    return {"kind": "value"}


def _negatives(flag: str) -> list[str]:
    for prefix, inverse in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
        if flag.startswith(prefix):
            return [inverse + flag.removeprefix(prefix)]
    return ["--no-" + flag.removeprefix("--")]


def option_table(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as archive:
        sources = {
            name: archive.read(name).decode("utf-8")
            for name in archive.namelist()
            if name in (ARG_UTILS, FRONTEND) or (name.startswith("vllm/config/") and name.endswith(".py"))
        }
    aliases: dict[str, ast.AST] = {}
    fields: dict[str, dict[str, ast.AST]] = {}
    for text in sources.values():
        tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                aliases.setdefault(node.targets[0].id, node.value)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        fields.setdefault(node.name, {})[item.target.id] = item.annotation
    options: dict[str, dict[str, Any]] = {}

    def add(flag: str, kind: dict[str, Any]) -> None:
        options[flag] = kind
        if kind["kind"] == "flag":
            for negative in _negatives(flag):
                options.setdefault(negative, {"kind": "flag"})

    tree = ast.parse(sources[ARG_UTILS])
    groups: dict[str, str] = {}  # model_kwargs -> ModelConfig
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "get_kwargs"
            and node.value.args
            and isinstance(node.value.args[0], ast.Name)
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    groups[target.id] = node.value.args[0].id
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        ):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
        if not flags:
            continue
        kind: dict[str, Any] = {"kind": "value"}
        for keyword in node.keywords:
            if keyword.arg == "action" and "BooleanOptionalAction" in ast.unparse(keyword.value):
                kind = {"kind": "flag"}
            elif keyword.arg == "action" and "store_true" in ast.unparse(keyword.value):
                kind = {"kind": "store-true"}
            elif keyword.arg is None:  # **model_kwargs["field"], or **{**cache_kwargs["field"], "default": None}
                for sub in ast.walk(keyword.value):
                    if (
                        isinstance(sub, ast.Subscript)
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id in groups
                        and isinstance(sub.slice, ast.Constant)
                    ):
                        annotation = fields.get(groups[sub.value.id], {}).get(sub.slice.value)
                        if annotation is not None:
                            kind = _kind(annotation, aliases)
                        break
        for flag in flags:
            add(flag, dict(kind))
    frontend = ast.parse(sources[FRONTEND])
    for node in frontend.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    add("--" + item.target.id.replace("_", "-"), _kind(item.annotation, aliases))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return {"wheel": wheel.name, "sha256": digest, "options": dict(sorted(options.items()))}


def check_argv(argv: list[str] | tuple[str, ...], table: dict[str, Any]) -> list[str]:
    """Problems with a `vllm serve MODEL ...` argument list against the table (empty: every option is valid)."""
    options = table["options"]
    problems = []
    words = list(argv[3:])  # past `vllm serve MODEL`
    i = 0
    while i < len(words):
        flag = words[i]
        spec = options.get(flag)
        if spec is None:
            problems.append(f"{flag}: not a vllm serve option")
            i += 1
            continue
        if spec["kind"] in ("flag", "store-true"):
            i += 1
            continue
        if i + 1 >= len(words) or (words[i + 1].startswith("--") and spec["kind"] != "optional-value"):
            problems.append(f"{flag}: needs a value")
            i += 1
            continue
        value = words[i + 1]
        if spec["kind"] == "choice" and value not in spec["choices"]:
            problems.append(f"{flag} {value}: not one of {spec['choices']}")
        i += 2
    return problems


if __name__ == "__main__":
    print(json.dumps(option_table(Path(sys.argv[1])), indent=1))
