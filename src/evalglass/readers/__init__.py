"""The one reader of each kind of file a user or a run hands EvalGlass: YAML (config, ledger, schemas), exact JSON
(dataset lines, artifacts, labels, schemas) and opening a named file safely. Below metrics and lanes, which read
schema and rubric files with them, and above core: they know files, core does not."""
