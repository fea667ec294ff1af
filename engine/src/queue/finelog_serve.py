"""Arbiter's own finelog server: finelog's EmbeddedServer on loopback, storing under LOG_DIR. Started
detached by `arbiter serve` (so trials keep reporting if the server crashes), it writes STATE
({"pid", "port"}) once it listens, and stops on SIGTERM or when LOG_DIR is removed.

    python finelog_serve.py LOG_DIR STATE PORT   (PORT 0: any free port)
"""

import json
import os
import signal
import sys
import threading

from finelog_server import EmbeddedServer


def main():
    log_dir, state, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        server = EmbeddedServer(log_dir=log_dir, host="127.0.0.1", port=port)
    except Exception:  # the previous port is taken: any port will do
        server = EmbeddedServer(log_dir=log_dir, host="127.0.0.1", port=0)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with open(state + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "port": server.port}, f)
    os.replace(state + ".tmp", state)
    print(f"arbiter-finelog serving on 127.0.0.1:{server.port}, storing in {log_dir}", flush=True)
    # Stop on SIGTERM, or when the data dir it stores in is gone (nobody could adopt it any more).
    while not stop.wait(5.0):
        if not os.path.isdir(log_dir):
            print("arbiter-finelog: its store is gone; stopping", flush=True)
            break
    server.stop()
    print("arbiter-finelog stopped", flush=True)


if __name__ == "__main__":
    main()
