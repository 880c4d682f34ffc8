"""asv suites of icl (run from bench/: ``asv run``); see bench/README.md."""
