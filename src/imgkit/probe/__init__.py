"""imgkit's probe: runs INSIDE an image (stdlib only, python3 >= 3.8) and prints one JSON
document describing the CUDA stack the image really has, read from the libraries
themselves. It judges nothing: `imgkit verify` compares the facts with expectations."""
PROBE_VERSION = 3
