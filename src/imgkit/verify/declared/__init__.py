"""A team's declared checks (the family's `checks:`, a container-structure-test file that
matrix/checkfile.py reads), run against the image and judged as checks of the verdict, each
by its name ("check: NAME"), so they reach every output and the signed predicate like
imgkit's own, and a failed one fails the verdict.

    checks     every declared test of a file against one image; the verdict with them
    judged     what every kind shares: a command judged, a stream's problems, evidence
    files      file existence, file content and metadata tests (the image not started)
    commands   a command test in a container of its own
    in_probe   the tests that ride in the probe's own container, and their results
    gpu_tests  gpuTests, judged from the probe's report
    service    a service test: the image's own server must answer
"""
