"""The run history: every finished run kept in a database (SQLite by default, PostgreSQL by URL), its trends, and
run references (``main@latest``) that name a run on any machine.

It sits at the edge, beside the command line: it reads finished run folders and writes them back, and never
takes part in deciding a run. One job per module:

- ``location``: which database (``--db``, ``EVALGLASS_DB``, the default file) and its URL as it may be shown;
- ``schema``: the SQLAlchemy models (tables) and the schema revision this code reads and writes;
- ``migrate``: Alembic migrations, applied on first use under a lock (``migrations/``);
- ``store``: opening a database (SQLite pragmas, one-line errors with the password redacted);
- ``blobs``: a run folder's files as compressed, hashed chunks, and back;
- ``record``: one run recorded in one transaction (``run``'s hook and ``history import``), with the git and CI
  provenance ``engine.runs.provenance`` reads (a signed run's branch and commit: those its signature covers);
- ``query``: the runs and trends ``evalglass history`` lists;
- ``refs``: run references (folder, run id, ``BRANCH@latest``, ``BRANCH@DATE``, ``last``) resolved to a folder;
- ``named``: the run a reader names (a folder, the last run, a reference), for every reader the API offers;
- ``locator``: the run locator a run finds its baselines through (a reference; a branch's newest runs);
- ``rows``: a recorded run's summary rows checked against its own artifacts (``verify`` of a run read back).
"""
