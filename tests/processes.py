"""Running example scripts in subprocesses, for the resume tests."""

import signal
import subprocess
import time


def kill_when_written(command, path, env, timeout=120):
    """Starts `command`, waits until the file `path` exists (its first
    checkpoint), then kills it with SIGKILL, as a crash or a preemption would."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        deadline = time.monotonic() + timeout
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert path.exists(), f"no checkpoint was written at {path}"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
