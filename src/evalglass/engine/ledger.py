"""Reading the authority ledger. EvalGlass only ever reads it: there is no code path that writes one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalglass.core.authority import Ledger
from evalglass.core.fingerprint import fingerprint_of_bytes
from evalglass.engine.validation import validate_document
from evalglass.engine.yamlsource import load_yaml
from evalglass.errors import SetupError


@dataclass(frozen=True)
class LoadedLedger:
    ledger: Ledger
    path: Path
    fingerprint: str


def load_ledger(path: Path) -> LoadedLedger:
    if not path.exists():
        raise SetupError(
            "authority ledger not found",
            where=str(path),
            fix=(
                "create it (an empty ledger approves nothing; `evalglass init` writes one) "
                "or fix `ledger:` in the config"
            ),
        )
    doc = load_yaml(path, what="authority ledger")
    if doc.data is None:
        return LoadedLedger(ledger=Ledger(), path=path, fingerprint=fingerprint_of_bytes(doc.raw))
    ledger = validate_document(Ledger, doc, what="the authority ledger")
    return LoadedLedger(ledger=ledger, path=path, fingerprint=fingerprint_of_bytes(doc.raw))
