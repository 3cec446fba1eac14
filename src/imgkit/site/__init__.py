"""`imgkit site`: a static site of the matrix's verdicts (a grid, a page per image)."""
