"""Arbiter's own finelog server: finelog's EmbeddedServer on the loopback of its own network namespace,
storing under LOG_DIR. Started inside its sandbox by `arbiter finelog-inner`, which relays Arbiter's gates
to it; it stops on SIGTERM or when LOG_DIR is removed.

    python finelog_serve.py LOG_DIR PORT
"""

import os
import signal
import sys
import threading

from finelog_server import EmbeddedServer


def main():
    log_dir, port = sys.argv[1], int(sys.argv[2])
    server = EmbeddedServer(log_dir=log_dir, host="127.0.0.1", port=port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"arbiter-finelog serving on 127.0.0.1:{server.port} (its own namespace), storing in {log_dir}", flush=True)
    while not stop.wait(5.0):
        if not os.path.isdir(log_dir):
            print("arbiter-finelog: its store is gone; stopping", flush=True)
            break
    server.stop()
    print("arbiter-finelog stopped", flush=True)


if __name__ == "__main__":
    main()
