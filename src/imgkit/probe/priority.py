"""What yields the CPU to the framework's import, the one step the probe cannot make
shorter, whenever both want it (on a machine with cores to spare it changes nothing): the
first lines of the probe's helper interpreters (library loads, `pip check`), and `lower()`
for the probe's own threads that examine the libraries and list what is installed."""
import os

BACKGROUND = "import os\ntry:\n    os.nice(10)\nexcept (AttributeError, OSError):\n    pass\n"


def lower():
    """Lower the calling thread's priority. Linux keeps a nice value per thread, so the
    thread that runs the framework's interpreter (and the GPU work after) keeps its own;
    threads and children started from this one inherit the lower one."""
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
