"""The first lines of the probe's helper interpreters (library loads, `pip check`): they
yield the CPU to the framework's import, the one step the probe cannot make shorter,
whenever both want it; on a machine with cores to spare it changes nothing."""
BACKGROUND = "import os\ntry:\n    os.nice(10)\nexcept (AttributeError, OSError):\n    pass\n"
