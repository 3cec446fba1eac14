"""`imgkit scan`: known vulnerabilities in an image, found by a real scanner (osv-scanner)
against an advisory database kept on disk, held to the project's threshold and waivers.

    command    the command: the image saved, scanned, judged, reported
    scanner    running osv-scanner on a saved image, offline; its failures are the host's
    findings   what the scanner found, in one model (id, aliases, package, versions, severity,
               the layer that brought it)
    waivers    images/vulnerabilities.yaml: waivers as code, each with a reason and an expiry
    gate       the decision: what fails, what is waived, what a waiver no longer covers
"""
