"""Config helpers shared by the workflow and every study: the error type of config checks, the JSON-schema
validation of a config (section) with concise messages, and the canonical form of config values passed
to rules."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from .inputs import did_you_mean

#: at most this many problems are listed in one ConfigError (the count of the rest follows)
MAX_LISTED = 8

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


def load_schema(schema) -> dict:
    """A JSON schema given as a dict or as the path of a YAML/JSON file."""
    if isinstance(schema, dict):
        return schema
    import yaml

    return yaml.safe_load(Path(schema).read_text())


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
    validator = validators.extend(Draft202012Validator, {"properties": _properties_with_defaults})(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return cfg
    lines: list[str] = []
    for e in errors:
        for line in _describe(e, section):
            if line not in lines:
                lines.append(line)
    shown = lines[:MAX_LISTED]
    if len(lines) > MAX_LISTED:
        shown.append(f"... and {len(lines) - MAX_LISTED} more problem(s)")
    raise ConfigError("\n".join(shown))


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
#: (set from cluster.no_workers_timeout by sojourn.core.cluster, read by sojourn.core.io.report_progress)
NO_WORKERS_TIMEOUT = "sojourn.no-workers-timeout"
