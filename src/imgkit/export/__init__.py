"""Pure text out of the plan for other tools to run (CI pipelines); never imports the engine."""
