"""What a run is told: evalglass.yaml and the ledger read and validated (the ledger only ever read), where gates are
declared, the executor and trace selections, the starter files, and why an approval went stale. The bottom of the
engine: it imports no other engine package.
"""
