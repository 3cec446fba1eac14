"""Verify an image: run the probe, parse its facts, judge them into a Verdict, keep the ticket."""
