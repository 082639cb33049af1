"""JSON schema of the restart model file (YAML), and the check every loader runs first.

The schema fixes the shape (names, which keys, types, non-negative numbers); the value checks JSON
schema cannot express (entry vectors summing to 1, H rows summing to at most 1, absorption reachable,
class names in restart maps, stability) are in :mod:`sojourn.restart.model` and
:mod:`sojourn.restart.solve`. ``sojourn restart schema`` prints this schema as YAML.
"""
from __future__ import annotations

_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"}
_NONNEG = {"type": "number", "minimum": 0}
_PROB = {"type": "number", "minimum": 0, "maximum": 1}
_NUMBERS = {"type": "array", "items": {"type": "number"}}
_MATRIX = {"type": "array", "items": _NUMBERS}


def _list_of(required: list, properties: dict) -> dict:
    """A non-empty list of objects with these keys (no others) and these required ones."""
    return {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": False,
                                                      "required": required, "properties": properties}}


MODEL_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sojourn restart model: a multi-class G-network of PS queues with restart signals",
    "description": "Signals: each restart signal at a busy queue hits one job chosen uniformly, so with n jobs "
                   "present each is hit at rate g/n. Timeouts (sojourn restart simulate --semantics timeout, not "
                   "part of the file): a job's clock counts wall-clock time since it entered the queue or last "
                   "(re)started, not the service it received.",
    "type": "object",
    "additionalProperties": False,
    "required": ["queues"],
    "properties": {
        "model": {"const": "restart_gnetwork", "description": "optional tag written by to_dict"},
        "name": {**_NAME, "description": "model name (in titles and file attrs)"},
        "description": {"type": "string", "description": "free text: where the parameters come from"},
        "queues": _list_of(["name", "classes"], {
                    "name": _NAME,
                    "signal_rate": {**_NONNEG, "description": "external restart-signal rate g (Poisson); each signal "
                                                             "that finds the queue busy restarts one job chosen "
                                                             "uniformly among the n present, so each job is hit at "
                                                             "rate g/n (a signal finding the queue empty vanishes)"},
                    "restart": {"enum": ["anew", "keep_phase"],
                                "description": "anew: a restarted job enters its new class by the entry vector "
                                               "(work lost); keep_phase: it keeps its phase index"},
                    "classes": _list_of(["name", "service"], {
                                "name": _NAME,
                                "arrival_rate": {**_NONNEG, "description": "external Poisson arrival rate"},
                                "service": {
                                    "description": "phase-type service: {rates, entry, H} (H[p][q]: phase p to q; "
                                                   "exit = 1 - row sum), {alpha, T} (sub-generator) or "
                                                   "{erlang: k, rate: r}",
                                    "type": "object",
                                    "oneOf": [
                                        {"required": ["rates"], "additionalProperties": False, "properties": {
                                            "rates": {"type": "array", "minItems": 1, "items": {"type": "number"}},
                                            "entry": {"type": "array", "items": {"type": "number"}},
                                            "H": _MATRIX}},
                                        {"required": ["T"], "additionalProperties": False, "properties": {
                                            "alpha": {"type": "array", "items": {"type": "number"}},
                                            "T": _MATRIX}},
                                        {"required": ["erlang", "rate"], "additionalProperties": False, "properties": {
                                            "erlang": {"type": "integer", "minimum": 1},
                                            "rate": {"type": "number"}}},
                                    ],
                                },
                                "success": {"description": "restart success probability per phase (or one number)",
                                            "oneOf": [{"type": "number"}, _NUMBERS]},
                                "restart_to": {"description": "class map on a successful restart: "
                                                              "{class name: probability} or one class name",
                                               "oneOf": [_NAME, {"type": "object",
                                                                 "additionalProperties": {"type": "number"}}]},
                    }),
        }),
        "routing": {
            "type": "array",
            "items": {"type": "object", "additionalProperties": False, "required": ["from", "to", "probability"],
                      "properties": {"from": {"type": "array", "items": _NAME, "minItems": 2, "maxItems": 2},
                                     "to": {"type": "array", "items": _NAME, "minItems": 2, "maxItems": 2},
                                     "probability": {"type": "number"}}},
            "description": "a departure of [queue, class] joins [queue, class] with this probability",
        },
        "signals": {
            "type": "array",
            "items": {"type": "object", "additionalProperties": False, "required": ["from", "to", "probability"],
                      "properties": {"from": {"type": "array", "items": _NAME, "minItems": 2, "maxItems": 2},
                                     "to": _NAME, "probability": {"type": "number"}}},
            "description": "a departure of [queue, class] becomes a restart signal at queue 'to' with this probability "
                           "(like an external one: it restarts one job chosen uniformly at 'to')",
        },
    },
}


def check_model_dict(d) -> None:
    """ValueError naming the first offending field (``queues[0].classes[1].arrival_rate``) if ``d`` does not
    match :data:`MODEL_SCHEMA`. Ranges of numbers are left to the model constructors (clearer messages)."""
    import jsonschema

    if not isinstance(d, dict):
        raise ValueError(f"model must be a mapping with a 'queues' list; got {type(d).__name__}")
    validator = jsonschema.Draft202012Validator(MODEL_SCHEMA)
    errors = sorted(validator.iter_errors(d), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        e = errors[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path).lstrip(".") or "model"
        raise ValueError(f"{path}: {e.message}")
