# JupyterLab in the paddle-jupyter image: every interface, port 8888, never as root, and
# always behind a token (set JUPYTER_TOKEN, or read the generated one from the log).
c = get_config()  # noqa: F821 (Jupyter provides it)
c.ServerApp.ip = "0.0.0.0"
c.ServerApp.port = 8888
c.ServerApp.open_browser = False
c.ServerApp.root_dir = "/workspace"
c.ServerApp.allow_root = False
