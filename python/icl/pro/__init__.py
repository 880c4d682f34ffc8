"""Professional track: task catalogue, instances, submission contract, sandboxed harness and scoring."""
