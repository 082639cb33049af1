"""Validated specification of a multi-class G-network of PS queues with restart signals (seed 001).

A :class:`Network` has N processor-sharing queues; queue i serves its own job classes, each with
* a phase-type service given as entry vector ``entry`` (b), phase rates ``rates`` (μ) and phase routing
  ``H`` (H[p, q] = probability to go from phase p to phase q; exit probability 1 − Σ_q H[p, q]);
* an external Poisson arrival rate ``arrival_rate`` (λ);
* success probabilities ``success`` (α, one per phase) of a restart signal that picks a job of this class;
* a restart class map ``restart_to`` ({class name: probability}, the R row of the class).
Queue i receives external restart signals at rate ``signal_rate`` (λ⁻); ``restart`` says where a restarted
job starts: ``anew`` (in the entry vector of its new class, work discarded) or ``keep_phase`` (same phase
index in its new class). Between queues, a departure of (queue, class) joins (queue', class') with the
probabilities of ``routing``, becomes a restart signal at queue' with those of ``signals`` (the
Gelenbe-type case: non-linear traffic equations), and otherwise leaves.

Everything invalid raises ``ValueError`` naming the field (``queues[q1].classes[c2].service.H[1]``) and
the allowed range. Stability (Σρ < 1 at every queue) depends on the traffic equations and is checked
by :func:`sojourn.restart.solve.solve` (and by :func:`sojourn.restart.files.load_model`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from ..core.checks.guard import Estimate
from ..core.checks.validate import nonnegative_finite, positive_finite, probability
from ..core.laws import phase_type

RESTART_MODES = ("anew", "keep_phase")
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_TOL = 1e-9


def _name(field_name: str, value) -> str:
    if not isinstance(value, str) or not value or not set(value) <= _NAME_CHARS:
        raise ValueError(f"{field_name} must be a non-empty name of letters, digits, '_' or '-'; got {value!r}")
    return value


def _named_items(field_name: str, items, what: str) -> tuple:
    """A non-empty list of named items (classes, queues) as a tuple, their names distinct; ValueError naming the
    field."""
    if not isinstance(items, (tuple, list)) or not items:
        raise ValueError(f"{field_name} must be a non-empty list of {what}{'es' if what.endswith('s') else 's'}")
    items = tuple(items)
    names = [x.name for x in items]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{field_name}: duplicate {what} name(s) {dup}")
    return items


def _vector(field_name: str, value, n: int | None = None) -> tuple:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or len(value) == 0 or any(isinstance(v, (list, tuple)) for v in value):
        raise ValueError(f"{field_name} must be a non-empty list of numbers; got {value!r}")
    arr = np.asarray(value, dtype=object)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{field_name} must be a non-empty list of numbers; got {value!r}")
    if n is not None and arr.size != n:
        raise ValueError(f"{field_name} must have {n} entries (one per phase); got {arr.size}")
    return tuple(arr.tolist())


@dataclass(frozen=True)
class JobClass:
    """One class of jobs at one queue (see the module docstring for the fields)."""

    name: str
    rates: tuple
    entry: tuple = None
    H: tuple = None
    arrival_rate: float = 0.0
    success: tuple = None
    restart_to: tuple = ()  # ((class name, probability), ...)
    path: str = field(default="", compare=False, repr=False)  # field prefix for messages

    def __post_init__(self):
        p = self.path or f"classes[{self.name}]"
        object.__setattr__(self, "path", p)
        _name(f"{p}.name", self.name)
        rates = tuple(
            positive_finite(f"{p}.service.rates[{i}]", r)
            for i, r in enumerate(_vector(f"{p}.service.rates", self.rates))
        )
        P = len(rates)
        entry = (1.0,) + (0.0,) * (P - 1) if self.entry is None else _vector(f"{p}.service.entry", self.entry, P)
        entry = tuple(probability(f"{p}.service.entry[{i}]", x) for i, x in enumerate(entry))
        if abs(sum(entry) - 1.0) > _TOL:
            raise ValueError(f"{p}.service.entry must sum to 1; got sum {sum(entry):.12g}")
        H = np.zeros((P, P)) if self.H is None else self.H
        if isinstance(H, np.ndarray):
            H = H.tolist()
        if not isinstance(H, (list, tuple)) or len(H) != P:
            raise ValueError(f"{p}.service.H must be a {P}x{P} matrix (one row per phase); got {H!r}")
        rows = H
        clean = []
        for i, row in enumerate(rows):
            r = _vector(f"{p}.service.H[{i}]", row, P)
            r = tuple(probability(f"{p}.service.H[{i}][{j}]", x) for j, x in enumerate(r))
            if sum(r) > 1.0 + _TOL:
                raise ValueError(f"{p}.service.H[{i}] must sum to at most 1 (the rest is the exit probability); "
                                 f"got sum {sum(r):.12g}")
            clean.append(r)
        H = tuple(clean)
        T = -np.diag(rates) + np.asarray(rates)[:, None] * np.asarray(H)
        try:
            phase_type.validate(entry, T, name=f"{p}.service")
        except ValueError as exc:
            raise ValueError(f"{exc} (phase routing H of {p} never ends service from some phase)") from None
        from ..core.checks.guard import derived
        from ..core.laws.distributions import MEAN_RANGE

        mean = derived(f"{p}.service", lambda: float(phase_type.mean(entry, T)), "the mean service time",
                       "the phase rates are too large or too small")
        if not MEAN_RANGE[0] <= mean <= MEAN_RANGE[1]:  # the rule every law keeps (sojourn.core.laws.distributions)
            raise ValueError(f"{p}.service: the mean service time is {mean:.3g}; it must be within "
                             f"[{MEAN_RANGE[0]:g}, {MEAN_RANGE[1]:g}] (its square and 1/mean² stay finite doubles)")
        for i, r in enumerate(rates):
            if not MEAN_RANGE[0] <= 1.0 / r <= MEAN_RANGE[1]:
                raise ValueError(f"{p}.service.rates[{i}]: {r:g} is outside [{1 / MEAN_RANGE[1]:g}, "
                                 f"{1 / MEAN_RANGE[0]:g}] (a phase's mean 1/rate within the range every law keeps)")
        success = (1.0,) * P if self.success is None else self.success
        if isinstance(success, (int, float)) and not isinstance(success, bool):
            success = (success,) * P
        success = tuple(probability(f"{p}.success[{i}]", a) for i, a in enumerate(_vector(f"{p}.success", success, P)))
        lam = nonnegative_finite(f"{p}.arrival_rate", self.arrival_rate)
        rt = self.restart_to
        if isinstance(rt, dict):
            rt = tuple(rt.items())
        elif isinstance(rt, str):
            rt = ((rt, 1.0),)
        clean_rt = []
        for target, prob in rt:
            _name(f"{p}.restart_to", target)
            clean_rt.append((target, probability(f"{p}.restart_to[{target}]", prob)))
        total = sum(q for _, q in clean_rt)
        if clean_rt and abs(total - 1.0) > _TOL:
            raise ValueError(f"{p}.restart_to probabilities must sum to 1; got sum {total:.12g}")
        if not clean_rt and any(a > 0 for a in success):
            raise ValueError(f"{p}.restart_to is required when a success probability is > 0 "
                             f"(or set {p}.success to 0 in every phase)")
        for k, v in (("rates", rates), ("entry", entry), ("H", H), ("success", success),
                     ("arrival_rate", lam), ("restart_to", tuple(clean_rt))):
            object.__setattr__(self, k, v)

    @property
    def phases(self) -> int:
        return len(self.rates)

    @property
    def T(self) -> np.ndarray:
        """Sub-generator of the service PH: T = −diag(μ) + diag(μ) H."""
        mu = np.asarray(self.rates)
        return -np.diag(mu) + mu[:, None] * np.asarray(self.H)

    @property
    def mean_service(self) -> float:
        return phase_type.mean(self.entry, self.T)

    def to_dict(self) -> dict:
        return {"name": self.name, "arrival_rate": self.arrival_rate,
                "service": {"entry": list(self.entry), "rates": list(self.rates), "H": [list(r) for r in self.H]},
                "success": list(self.success), "restart_to": dict(self.restart_to)}


@dataclass(frozen=True)
class Queue:
    """One PS queue: its classes, its external restart-signal rate and the restart mode."""

    name: str
    classes: tuple
    signal_rate: float = 0.0
    restart: str = "anew"
    path: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        p = self.path or f"queues[{self.name}]"
        object.__setattr__(self, "path", p)
        _name(f"{p}.name", self.name)
        classes = _named_items(f"{p}.classes", self.classes, "class")
        names = [c.name for c in classes]
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "signal_rate", nonnegative_finite(f"{p}.signal_rate", self.signal_rate))
        if self.restart not in RESTART_MODES:
            raise ValueError(f"{p}.restart must be one of {RESTART_MODES}; got {self.restart!r}")
        for c in classes:
            for target, _ in c.restart_to:
                if target not in names:
                    raise ValueError(f"{c.path}.restart_to: unknown class {target!r} (classes of queue "
                                     f"{self.name!r}: {names})")
                if self.restart == "keep_phase":
                    tc = classes[names.index(target)]
                    if tc.phases != c.phases:
                        raise ValueError(f"{c.path}.restart_to: with {p}.restart = keep_phase a class must restart "
                                         f"into a class with as many phases ({c.name!r} has {c.phases}, "
                                         f"{target!r} has {tc.phases})")

    def to_dict(self) -> dict:
        return {"name": self.name, "signal_rate": self.signal_rate, "restart": self.restart,
                "classes": [c.to_dict() for c in self.classes]}


@dataclass(frozen=True)
class Layout:
    """Flat arrays of a network: stations c = (queue, class), types j = (queue, class, phase)."""

    station_queue: np.ndarray  # (C,) queue index of station c
    station_first: np.ndarray  # (C,) first type index of station c
    station_phases: np.ndarray  # (C,)
    type_station: np.ndarray  # (J,)
    type_queue: np.ndarray  # (J,)
    type_phase: np.ndarray  # (J,) phase index within the class
    mu: np.ndarray  # (J,) phase rates
    alpha: np.ndarray  # (J,) restart success probabilities
    phase_move: np.ndarray  # (J, J) probability of the next type on a phase completion (same station)
    exit_prob: np.ndarray  # (J,) probability that a phase completion ends the service
    entry: np.ndarray  # (C, J) entry vector of station c over types
    restart_move: np.ndarray  # (J, J) type after a successful restart
    routing: np.ndarray  # (C, C) departure of c joins c'
    signal_routing: np.ndarray  # (C, N) departure of c becomes a signal at queue n
    arrival: np.ndarray  # (C,) external arrival rates
    signal_ext: np.ndarray  # (N,) external signal rates
    labels: tuple  # (J,) "queue/class/phase" labels
    station_labels: tuple  # (C,) "queue/class"


@dataclass(frozen=True)
class Network:
    """N PS queues with restart signals, routing and departures that become signals."""

    queues: tuple
    routing: tuple = ()  # ((from queue, from class, to queue, to class, probability), ...)
    signals: tuple = ()  # ((from queue, from class, to queue, probability), ...)
    name: str = "model"

    def __post_init__(self):
        _name("name", self.name)
        queues = _named_items("queues", self.queues, "queue")
        names = [q.name for q in queues]
        object.__setattr__(self, "queues", queues)
        routing = []
        for i, r in enumerate(self.routing):
            if len(r) != 5:
                raise ValueError(f"routing[{i}] must be (from queue, from class, to queue, to class, probability)")
            fq, fc, tq, tc, pr = r
            self._station(f"routing[{i}].from", fq, fc)
            self._station(f"routing[{i}].to", tq, tc)
            routing.append((fq, fc, tq, tc, probability(f"routing[{i}].probability", pr)))
        signals = []
        for i, r in enumerate(self.signals):
            if len(r) != 4:
                raise ValueError(f"signals[{i}] must be (from queue, from class, to queue, probability)")
            fq, fc, tq, pr = r
            self._station(f"signals[{i}].from", fq, fc)
            if tq not in names:
                raise ValueError(f"signals[{i}].to: unknown queue {tq!r} (queues: {names})")
            signals.append((fq, fc, tq, probability(f"signals[{i}].probability", pr)))
        object.__setattr__(self, "routing", tuple(routing))
        object.__setattr__(self, "signals", tuple(signals))
        out = {}
        for fq, fc, *_, pr in routing + signals:
            out[(fq, fc)] = out.get((fq, fc), 0.0) + pr
        for (fq, fc), tot in out.items():
            if tot > 1.0 + _TOL:
                raise ValueError(f"routing/signals out of queue {fq!r} class {fc!r} must sum to at most 1 "
                                 f"(the rest leaves the network); got sum {tot:.12g}")
        if not any(c.arrival_rate > 0 for q in queues for c in q.classes):
            raise ValueError("arrival_rate must be > 0 for at least one class (no jobs would ever arrive)")

    def _station(self, field_name, qname, cname):
        for q in self.queues:
            if q.name == qname:
                if cname not in [c.name for c in q.classes]:
                    raise ValueError(f"{field_name}: queue {qname!r} has no class {cname!r}")
                return
        raise ValueError(f"{field_name}: unknown queue {qname!r} (queues: {[q.name for q in self.queues]})")

    # -- derived -------------------------------------------------------------------------------------
    @cached_property
    def layout(self) -> Layout:
        stations = [(qi, q, c) for qi, q in enumerate(self.queues) for c in q.classes]
        C = len(stations)
        first, P = [], []
        J = 0
        for _, _, c in stations:
            first.append(J)
            P.append(c.phases)
            J += c.phases
        index = {(q.name, c.name): s for s, (_, q, c) in enumerate(stations)}
        qindex = {q.name: i for i, q in enumerate(self.queues)}
        N = len(self.queues)
        type_station = np.repeat(np.arange(C), P)
        type_queue = np.array([stations[s][0] for s in type_station], np.int64)
        type_phase = np.concatenate([np.arange(p) for p in P]).astype(np.int64)
        mu = np.concatenate([c.rates for _, _, c in stations]).astype(float)
        alpha = np.concatenate([c.success for _, _, c in stations]).astype(float)
        phase_move = np.zeros((J, J))
        entry = np.zeros((C, J))
        for s, (_, _, c) in enumerate(stations):
            a = first[s]
            phase_move[a:a + c.phases, a:a + c.phases] = np.asarray(c.H)
            entry[s, a:a + c.phases] = c.entry
        exit_prob = np.clip(1.0 - phase_move.sum(axis=1), 0.0, 1.0)
        restart_move = np.zeros((J, J))
        for s, (_qi, q, c) in enumerate(stations):
            for target, pr in c.restart_to:
                t = index[(q.name, target)]
                for ph in range(c.phases):
                    if q.restart == "anew":
                        restart_move[first[s] + ph] += pr * entry[t]
                    else:
                        restart_move[first[s] + ph, first[t] + ph] += pr
        routing = np.zeros((C, C))
        for fq, fc, tq, tc, pr in self.routing:
            routing[index[(fq, fc)], index[(tq, tc)]] += pr
        signal_routing = np.zeros((C, N))
        for fq, fc, tq, pr in self.signals:
            signal_routing[index[(fq, fc)], qindex[tq]] += pr
        labels = tuple(f"{q.name}/{c.name}/{ph + 1}" for _, q, c in stations for ph in range(c.phases))
        return Layout(
            station_queue=np.array([s[0] for s in stations], np.int64), station_first=np.array(first, np.int64),
            station_phases=np.array(P, np.int64), type_station=type_station.astype(np.int64),
            type_queue=type_queue, type_phase=type_phase, mu=mu, alpha=alpha, phase_move=phase_move,
            exit_prob=exit_prob, entry=entry, restart_move=restart_move, routing=routing,
            signal_routing=signal_routing, arrival=np.array([c.arrival_rate for _, _, c in stations]),
            signal_ext=np.array([q.signal_rate for q in self.queues]), labels=labels,
            station_labels=tuple(f"{q.name}/{c.name}" for _, q, c in stations))

    def totals(self, index: str, values) -> np.ndarray:
        """Sums of ``values`` within each station or queue; ``index`` names the layout's map from what ``values``
        are indexed by to where they are summed: ``type_station`` (C,), ``type_queue`` or ``station_queue`` (N,)."""
        L = self.layout
        size = len(L.station_queue) if index.endswith("_station") else len(self.queues)
        return np.bincount(getattr(L, index), weights=values, minlength=size)

    @property
    def arrival_rate(self) -> float:
        """Total external arrival rate Σλ."""
        return float(sum(c.arrival_rate for q in self.queues for c in q.classes))

    @property
    def has_departure_signals(self) -> bool:
        """True when departures become signals: the traffic equations are then non-linear."""
        return any(pr > 0 for *_, pr in self.signals)

    def queue_index(self, queue: str | int | None) -> int:
        """Index of a queue given by name or index (None: the only queue, or an error)."""
        if queue is None:
            if len(self.queues) != 1:
                raise ValueError(f"queue must be given for a network of {len(self.queues)} queues "
                                 f"(one of {[q.name for q in self.queues]})")
            return 0
        if isinstance(queue, int) and not isinstance(queue, bool) and 0 <= queue < len(self.queues):
            return queue
        for i, q in enumerate(self.queues):
            if q.name == queue:
                return i
        raise ValueError(f"queue must be one of {[q.name for q in self.queues]}; got {queue!r}")

    def with_signal_rate(self, rate: float, queue: str | int | None = None) -> Network:
        """The same network with the external signal rate of ``queue`` set to ``rate``."""
        i = self.queue_index(queue)
        qs = list(self.queues)
        qs[i] = replace(qs[i], signal_rate=nonnegative_finite("signal_rate", rate))
        return replace(self, queues=tuple(qs))

    def with_success(self, factor: float) -> Network:
        """Every success probability multiplied by ``factor`` (a deliberately wrong model for power controls)."""
        qs = []
        for q in self.queues:
            cs = [replace(c, success=tuple(min(1.0, a * factor) for a in c.success)) for c in q.classes]
            qs.append(replace(q, classes=tuple(cs)))
        return replace(self, queues=tuple(qs))

    # -- serialisation -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"model": "restart_gnetwork", "name": self.name, "queues": [q.to_dict() for q in self.queues],
                "routing": [{"from": [a, b], "to": [c, d], "probability": p} for a, b, c, d, p in self.routing],
                "signals": [{"from": [a, b], "to": c, "probability": p} for a, b, c, p in self.signals]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def describe(self) -> str:
        parts = []
        for q in self.queues:
            cls = ", ".join(
                f"{c.name}(λ={c.arrival_rate:g}, {c.phases} ph, E[S]={c.mean_service:.4g})" for c in q.classes
            )
            parts.append(f"{q.name}: PS, signals λ⁻={q.signal_rate:g}, restart {q.restart}; {cls}")
        return f"{self.name}: " + " | ".join(parts)


# -- model files ----------------------------------------------------------------------------------------
#: a network's dense tables are J x J (phase moves, restart moves, their cumulative copies: 6 of them, and a
#: temporary: 7); its checks and the traffic equations solve J x J and P x P systems (benchmarks/cost_models.py:
#: an Erlang class of 3000 phases, 804 MB and 40 s of CPU)
TABLES_PER_TYPE_PAIR = 7
SECONDS_PER_CUBED_TYPE = 1.2e-9


def phase_counts(d: dict) -> list[tuple[str, int]]:
    """(key path of a class's service, its phases) for every class of a model-file mapping, read before anything
    is built (an ``erlang: 100000000`` service would otherwise be laid out as a 1e8 x 1e8 matrix)."""
    out = []
    for qi, qd in enumerate(d.get("queues") or []):
        if not isinstance(qd, dict):
            continue
        for ci, cd in enumerate(qd.get("classes") or []):
            svc = cd.get("service") if isinstance(cd, dict) else None
            if not isinstance(svc, dict):
                continue
            path = f"queues[{qd.get('name', qi)}].classes[{cd.get('name', ci)}].service"
            if isinstance(svc.get("erlang"), int) and not isinstance(svc.get("erlang"), bool):
                out.append((f"{path}.erlang", int(svc["erlang"])))
            elif isinstance(svc.get("rates"), list):
                out.append((f"{path}.rates", len(svc["rates"])))
            elif isinstance(svc.get("T"), list):
                out.append((f"{path}.T", len(svc["T"])))
    return out


def network(counts: list[tuple[str, int]]) -> Estimate:
    """The phase tables of a network whose classes have these phase counts: J x J tables, the classes' P x P
    checks and the traffic equations."""
    if not counts:
        return Estimate()
    J = float(sum(p for _, p in counts))
    largest = max(counts, key=lambda c: c[1])
    return Estimate(SECONDS_PER_CUBED_TYPE * (J**3 + sum(float(p) ** 3 for _, p in counts)),
                    8.0 * TABLES_PER_TYPE_PAIR * J * J + 8.0 * 4 * sum(float(p) ** 2 for _, p in counts),
                    largest[0], f"a network of {J:.3g} phase types (largest class: {largest[1]:,} phases): its "
                                f"{TABLES_PER_TYPE_PAIR} tables of {J:.3g} x {J:.3g}")


def _service(path: str, svc) -> dict:
    """The service block of a model file: {entry, rates, H} or {alpha, T} (PH) or {erlang: k, rate: r}."""
    if not isinstance(svc, dict):
        raise ValueError(f"{path}.service must be a mapping")
    keys = set(svc)
    if "rates" in keys:
        bad = keys - {"entry", "rates", "H"}
        if bad:
            raise ValueError(f"{path}.service: unknown key(s) {sorted(bad)} (with rates: entry, rates, H)")
        return {"entry": svc.get("entry"), "rates": svc["rates"], "H": svc.get("H")}
    if "T" in keys:
        bad = keys - {"alpha", "T"}
        if bad:
            raise ValueError(f"{path}.service: unknown key(s) {sorted(bad)} (with T: alpha, T)")
        a, T = phase_type.validate(
            svc.get("alpha", [1.0] + [0.0] * (len(svc["T"]) - 1)), svc["T"], name=f"{path}.service"
        )
        mu = -np.diag(T)
        H = T / mu[:, None] + np.eye(len(mu))
        return {"entry": a.tolist(), "rates": mu.tolist(), "H": H.tolist()}
    if "erlang" in keys:
        bad = keys - {"erlang", "rate"}
        if bad:
            raise ValueError(f"{path}.service: unknown key(s) {sorted(bad)} (with erlang: erlang, rate)")
        k = svc["erlang"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{path}.service.erlang must be an integer >= 1; got {k!r}")
        rate = positive_finite(f"{path}.service.rate", svc.get("rate"))
        H = np.eye(k, k, 1)
        return {"entry": None, "rates": [rate] * k, "H": H.tolist()}
    raise ValueError(f"{path}.service must give rates (with entry, H), T (with alpha) or erlang (with rate)")


def model_from_dict(d: dict) -> Network:
    """Build a :class:`Network` from the model-file mapping (schema: :data:`sojourn.restart.schema.MODEL_SCHEMA`)."""
    from ..core.checks.guard import admit
    from .schema import check_model_dict

    check_model_dict(d)
    admit(network(phase_counts(d)), record=False)  # the phase tables, before any is laid out
    queues = []
    for qd in d["queues"]:
        qp = f"queues[{qd['name']}]"
        classes = []
        for cd in qd["classes"]:
            cp = f"{qp}.classes[{cd['name']}]"
            svc = _service(cp, cd["service"])
            classes.append(JobClass(name=cd["name"], rates=svc["rates"], entry=svc["entry"], H=svc["H"],
                                    arrival_rate=cd.get("arrival_rate", 0.0), success=cd.get("success"),
                                    restart_to=cd.get("restart_to", {}), path=cp))
        queues.append(Queue(name=qd["name"], classes=tuple(classes), signal_rate=qd.get("signal_rate", 0.0),
                            restart=qd.get("restart", "anew"), path=qp))
    routing = tuple(
        (r["from"][0], r["from"][1], r["to"][0], r["to"][1], r["probability"]) for r in d.get("routing", [])
    )
    signals = tuple((r["from"][0], r["from"][1], r["to"], r["probability"]) for r in d.get("signals", []))
    return Network(queues=tuple(queues), routing=routing, signals=signals, name=d.get("name", "model"))
