"""The declared matrix: spec (files) -> compat (what exists) -> plan (the DAG of images)."""
