"""Config helpers shared by the workflow and every study: the error type of config checks, the JSON-schema
validation of a config (section) with concise messages, and the canonical form of config values passed
to rules."""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

from .inputs import did_you_mean

#: at most this many problems are listed in one ConfigError (the count of the rest follows)
MAX_LISTED = 8

#: the project's one default percentile level (percent): a precision target's ``at`` when a percentile is asked for
#: without one, and the percentile a summary leads with
DEFAULT_PERCENTILE = 99.0
#: the project's one default confidence level, of every interval the studies report
DEFAULT_CONFIDENCE = 0.95

_TYPE_WORDS = {"object": "a mapping (key: value)", "array": "a list", "string": "a string", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}
_LIMITS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


class ConfigError(ValueError):
    """An invalid config value; the message starts with the key path (``jsq_ps.simulation.horizon: …``)."""


def canonical(value):
    """Recursively key-sorted copy of a config value, for ``params:``.

    Snakemake compares params by ``repr``, in which dict order shows: without this, the same settings
    written in another key order (e.g. a YAML dump) would rerun every job."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def run_window(study: dict | None, override: dict | None = None) -> dict:
    """The run window of a replication, one block in every study: the study's ``simulation.window`` with the keys an
    experiment's or example's own ``window`` gives in their place. ``{length, warmup, cooldown}``, a null warmup or
    cooldown left null (the project's defaults: :func:`sojourn.core.estimates.replications.check_window`)."""
    return {"length": None, "warmup": None, "cooldown": None, **(study or {}), **(override or {})}


def load_schema(schema) -> dict:
    """A JSON schema given as a dict or as the path of a YAML/JSON file. References to another file's
    definitions (``{$ref: "common.schema.yaml#/$defs/simulation", …}``, relative to the referring file) are
    inlined, the keys given beside the ``$ref`` merged over the definition (a ``properties`` entry is added,
    a ``default`` replaced): so every study's schema takes the shared blocks and fills in their defaults."""
    if isinstance(schema, dict):
        return schema
    path = Path(schema).resolve()
    return _load_schema(str(path), path.stat().st_mtime)


@functools.lru_cache(maxsize=16)
def _load_schema(path: str, mtime: float) -> dict:
    """The inlined schema of a file, read once per process and version of the file (validation only reads it)."""
    import yaml

    p = Path(path)
    return _stored_integers(_inline(yaml.safe_load(p.read_text()), p.parent, {}))  # (its $defs stay too)


def _stored_integers(node, key: str | None = None):
    """Every integer of the schema bounded by what is stored (the guard's kinds: int64, seeds below 2**64): an
    ``integer`` without a ``maximum`` gets one, so that ``seed: 1.0e+30`` is refused before any job (issue 32: it
    passed the dry run, then every replication failed writing its attribute)."""
    from .guard import INT_MAX, SEED_MAX

    if isinstance(node, list):
        return [_stored_integers(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _stored_integers(v, k) for k, v in node.items()}
    types = out.get("type")
    if (types == "integer" or isinstance(types, list) and "integer" in types) and "maximum" not in out:
        out["maximum"] = SEED_MAX if key == "seed" else INT_MAX
    return out


def check_config_files(paths, default) -> None:
    """The config files a run reads (``workflow.configfiles``), each read as :func:`sojourn.core.checks.guard.load_yaml`
    reads it before anything uses it: a key given twice and aliases that expand beyond the guard's limit are
    refused; an override that sets an empty mapping over a non-empty default (``restart.examples: {}``) is
    refused (the merge would keep every default: docs/pipeline.md, "Overrides"). ConfigError naming the file and
    the key path."""
    from .guard import empty_overrides, load_yaml

    default = Path(default).resolve()
    defaults = None
    for p in paths:
        path = Path(p)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {p}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        try:
            data = load_yaml(text, f"config file {p}")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if path.resolve() == default:
            continue
        if defaults is None:
            defaults = load_yaml(default.read_text(encoding="utf-8"), str(default))
        empty = empty_overrides(data, defaults)
        if empty:
            raise ConfigError("\n".join(
                f"{k}: an empty mapping in {p} would keep every default entry of {k} (a config file is merged into "
                "the defaults, key by key); to run none, set the study's enabled: false; to run some, give them"
                for k in empty[:MAX_LISTED]))


def _inline(node, folder: Path, files: dict, root=None):
    """``node`` with every ``$ref`` (to another file, or within this one: ``root``) replaced by the definition it
    names, the keys beside it merged over (:func:`_merge`)."""
    import yaml

    if root is None:
        root = node
    if isinstance(node, list):
        return [_inline(v, folder, files, root) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return {k: _inline(v, folder, files, root) for k, v in node.items()}
    name, _, pointer = ref.partition("#")
    if name:
        target = (folder / name).resolve()
        if target not in files:
            files[target] = yaml.safe_load(target.read_text())
        doc, doc_folder = files[target], target.parent
    else:
        doc, doc_folder = root, folder
    part = doc
    for key in [k for k in pointer.split("/") if k]:
        part = part[key]
    base = _inline(copy.deepcopy(part), doc_folder, files, doc)
    return _merge(base, _inline({k: v for k, v in node.items() if k != "$ref"}, folder, files, root))


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) and k != "default" else v
    return out


def validate_config(cfg: dict, schema, section: str | None = None) -> dict:
    """Check ``cfg`` against the JSON ``schema`` (a dict or a YAML/JSON file) and fill in the schema's
    defaults in place, as ``snakemake.utils.validate`` does (a default object is filled recursively).

    ``section`` is the key path of ``cfg`` inside the whole config (``"jsq_ps"``), used in messages. On
    failure raises :class:`ConfigError` with one line per problem (at most ``MAX_LISTED``), each
    starting with the full key path and a one-line reason: an unknown key with "did you mean …" and
    the allowed keys, a wrong type with the value given (and, for a number or boolean written as a
    string, the hint that ``--config`` overrides arrive as strings), a value out of range with the
    bound. The schema itself is never printed. Returns ``cfg``."""
    from jsonschema import Draft202012Validator, validators

    schema = load_schema(schema)
    moved = _moved_keys(cfg, schema.get("x-moved") or {}, section)
    if moved:
        raise ConfigError("\n".join(moved[:MAX_LISTED]))
    validator = validators.extend(Draft202012Validator, {"properties": _properties_with_defaults})(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: [str(p) for p in e.absolute_path])
    lines: list[str] = [] if errors else _not_finite(cfg, section)
    if not errors and not lines:
        _as_ints(cfg, schema)
        return cfg
    for e in errors:
        for line in _describe(e, section):
            if line not in lines:
                lines.append(line)
    shown = lines[:MAX_LISTED]
    if len(lines) > MAX_LISTED:
        shown.append(f"... and {len(lines) - MAX_LISTED} more problem(s)")
    raise ConfigError("\n".join(shown))


def _as_ints(node, schema) -> None:
    """An integer-valued float where the schema wants an integer (``replicas: [1, 1.0e9]``: JSON schema accepts
    1.0e9 as an integer) made an int in place, so that the code reading it never meets a float (issue 32's fuzzer:
    ``range(1, r + 1)`` raised a TypeError)."""
    if not isinstance(schema, dict):
        return

    def integer(sub):
        t = sub.get("type") if isinstance(sub, dict) else None
        return t == "integer" or (isinstance(t, list) and "integer" in t and "number" not in t)

    if isinstance(node, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for k, v in node.items():
            sub = props.get(k, extra if isinstance(extra, dict) else None)
            if sub is None:
                continue
            if integer(sub) and isinstance(v, float) and v.is_integer():
                node[k] = int(v)
            else:
                _as_ints(v, sub)
    elif isinstance(node, list):
        sub = schema.get("items")
        for i, v in enumerate(node):
            if integer(sub) and isinstance(v, float) and v.is_integer():
                node[i] = int(v)
            else:
                _as_ints(v, sub)


def _moved_keys(cfg, moved: dict, section: str | None) -> list[str]:
    """One line per key of ``cfg`` that an earlier release had and the schema's ``x-moved`` map sends elsewhere
    (``{old.key.path: "where it is now, and how"}``; ``*`` in a path matches any key)."""
    out = []

    def walk(node, parts, path):
        if not parts:
            return [path]
        if not isinstance(node, dict):
            return []
        head, rest = parts[0], parts[1:]
        keys = list(node) if head == "*" else ([head] if head in node else [])
        return [p for k in keys for p in walk(node[k], rest, path + [k])]

    for old, new in moved.items():
        for path in walk(cfg, old.split("."), []):
            out.append(f"{key_path(section, path)}: this key has moved: {new}")
    return out


def _not_finite(cfg, section: str | None) -> list[str]:
    """One line per number of ``cfg`` that is infinite or NaN (YAML ``.inf``, ``.nan``): every setting is finite."""
    import math

    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + [i])
        elif isinstance(node, float) and not math.isfinite(node):
            out.append(f"{key_path(section, path)}: must be a finite number; got {node!r}")

    walk(cfg, [])
    return out


def _properties_with_defaults(validator, properties, instance, schema):
    """The ``properties`` keyword that first fills missing keys with (copies of) their defaults."""
    from jsonschema import Draft202012Validator

    if isinstance(instance, dict):
        for key, sub in properties.items():
            if "default" in sub and key not in instance:
                instance[key] = copy.deepcopy(sub["default"])
    yield from Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


def key_path(section: str | None, path) -> str:
    """``jsq_ps.mgr.laws[0].law`` from a section name and a JSON-schema error path."""
    out = section or ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _got(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(e, section) -> list[str]:
    """One line per problem of the jsonschema error ``e``: key path first, then the reason."""
    where = key_path(section, e.absolute_path)
    v, kw, sch = e.instance, e.validator, e.schema
    if kw == "additionalProperties":
        allowed = list(sch.get("properties", {}))
        return [f"{key_path(section, [*e.absolute_path, k])}: unknown key{did_you_mean(k, allowed)}"
                f" (allowed here: {', '.join(allowed)})"
                for k in v if k not in allowed]
    if kw == "type":
        types = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        want = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        hint = ""
        if isinstance(v, str) and _looks_typed(v):
            hint = (" (a value given with --config arrives as a string: put overrides in a YAML file "
                    "passed with --configfile)")
        return [f"{where}: must be {want}; got {_got(v)}{hint}"]
    if kw == "enum":
        return [f"{where}: must be one of {', '.join(map(str, e.validator_value))}; got {_got(v)}"
                f"{did_you_mean(v, map(str, e.validator_value))}"]
    if kw in _LIMITS:
        return [f"{where}: must be {_LIMITS[kw]} {e.validator_value}; got {_got(v)}"]
    if kw == "minItems":
        return [f"{where}: needs at least {e.validator_value} item(s); got {_got(v)}"]
    if kw == "maxItems":
        return [f"{where}: takes at most {e.validator_value} item(s); got {len(v)}"]
    if kw == "required":
        missing = [k for k in e.validator_value if isinstance(v, dict) and k not in v]
        return [f"{key_path(section, [*e.absolute_path, k])}: missing (required)" for k in missing]
    if kw == "uniqueItems":
        seen, dup = set(), None
        for x in v:
            k = json.dumps(x, sort_keys=True, default=str)
            if k in seen:
                dup = x
                break
            seen.add(k)
        return [f"{where}: every item must be distinct; {_got(dup)} is given twice in {_got(v)}"]
    if kw == "pattern":
        return [f"{where}: must match the pattern {e.validator_value}; got {_got(v)}"]
    if kw in ("oneOf", "anyOf"):
        forms = [_form(s) for s in e.validator_value]
        return [f"{where}: must be {' or '.join(forms)}; got {_got(v)}"]
    return [f"{where}: {e.message}"]


def _form(sub: dict) -> str:
    """A short description of one alternative of a oneOf/anyOf (its type and required keys)."""
    t = sub.get("type")
    text = _TYPE_WORDS.get(t, str(t)) if isinstance(t, str) else "a value"
    if sub.get("required"):
        text += f" with key(s) {', '.join(sub['required'])}"
    return text


def _looks_typed(text: str) -> bool:
    """A string that YAML would read as a number, boolean, null, list or mapping."""
    import yaml

    try:
        return not isinstance(yaml.safe_load(text), str)
    except yaml.YAMLError:
        return False


#: dask config key: how long a job waits while its Dask cluster has no worker at all before it fails
#: (set from cluster.no_workers_timeout by sojourn.core.cluster.cluster, read by
#: sojourn.core.cluster.cluster.report_progress)
NO_WORKERS_TIMEOUT = "sojourn.no-workers-timeout"
