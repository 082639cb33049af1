"""The registry of studies: which exist, where their code, rules, schema and commands live.

A study is a package ``sojourn.<name>`` that imports the core (``sojourn.core``) and never another
study, and declares one object satisfying the core's study protocol (:class:`sojourn.core.runs.protocol.Study`:
``sojourn.<name>.protocol.STUDY``); its workflow rules are ``workflow/rules/<name>.smk``, its config section
``<name>:`` is checked by ``workflow/schemas/<name>.schema.yaml``, its results go under ``<results>/<name>/``. The
Snakefile includes the rule file of every enabled study and the CLI registers each study's commands.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Study:
    name: str  # package, config section, rule file, schema, results folder
    title: str  # report category and CLI group description
    cli: str | None = None  # module with register(subparsers) for the study's commands
    commands: tuple[str, ...] = ()  # the commands it registers (the CLI imports only the study a command needs)
    light: tuple[tuple[str, str], ...] = ()  # (command, module) registered by a module of its own, imported alone
    category: str = ""  # its section of the HTML report

    @property
    def package(self) -> str:
        return f"sojourn.{self.name}"

    def protocol(self):
        """The study's object satisfying :class:`sojourn.core.runs.protocol.Study`
        (``sojourn.<name>.protocol.STUDY``)."""
        import importlib

        return importlib.import_module(f"{self.package}.protocol").STUDY


STUDIES: tuple[Study, ...] = (
    Study("jsq_ps", "JSQ-PS: R processor-sharing servers behind join-the-shortest-queue (seed 000)",
          "sojourn.jsq_ps.cli", ("simulate", "approximate", "plan"), (("plan", "sojourn.jsq_ps.plan.cli"),), "JSQ-PS"),
    Study("split_merge", "Split-merge: (n, r, q) workunit replication with quorum (seed 002)",
          "sojourn.split_merge.cli", ("split-merge",), category="Split-merge"),
    Study("restart", "Restart: multi-class G-networks of PS queues with restart signals (seed 001)",
          "sojourn.restart.cli", ("restart",), category="Restart"),
)


def names() -> list[str]:
    return [s.name for s in STUDIES]


def get(name: str) -> Study:
    for s in STUDIES:
        if s.name == name:
            return s
    raise KeyError(f"unknown study {name!r}; known: {', '.join(names())}")
