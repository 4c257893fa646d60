"""Where a run's gates are declared, as file and line, for annotations that point at the declaration."""

from __future__ import annotations

from pathlib import Path

from evalglass.core.fingerprint import fingerprint_of_bytes
from evalglass.core.runrecord import RunRecord
from evalglass.errors import SetupError
from evalglass.readers.yamlsource import YamlDocument, load_yaml


def gate_sites(record: RunRecord) -> dict[str, tuple[Path, int]]:
    """Each gate's ``gates.<name>`` key in the config the run read; a gate the config does not declare (an active
    ledger entry left behind: ``gate_undeclared``) points at its ledger entry instead.

    A file is used only while its bytes are the ones the run recorded (same fingerprint): once it has been edited,
    its line numbers may point at something else, so its gates get no site rather than a wrong one.
    """
    declared = set(record.config.get("gates") or ())
    sites: dict[str, tuple[Path, int]] = {}
    config = _unchanged(Path(record.config_path), record.config_fingerprint)
    ledger = _unchanged(Path(record.ledger_path), record.ledger_fingerprint)
    for document, wanted in ((config, True), (ledger, False)):
        if document is None:
            continue
        for loc, line in document.lines.items():
            if len(loc) == 2 and loc[0] == "gates" and isinstance(loc[1], str) and (loc[1] in declared) is wanted:
                sites[loc[1]] = (document.path, line)
    return sites


def _unchanged(path: Path, fingerprint: str) -> YamlDocument | None:
    try:
        document = load_yaml(path, what="file")
    except SetupError:
        return None
    return document if fingerprint_of_bytes(document.raw) == fingerprint else None
