"""What several test modules share, as modules of their own: test modules import from here
(and take fixtures from conftest.py), never from one another."""
