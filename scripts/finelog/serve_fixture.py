"""A real finelog server for tests: starts finelog's EmbeddedServer on loopback, optionally writes
`zephyr.stage` rows (a JSON list in the shape of the reference rows) through finelog's own client, prints
`ready <port>` and serves until its standard input closes.

    python serve_fixture.py LOG_DIR [ROWS.json]
"""

import dataclasses
import datetime
import json
import sys

from finelog.client import LogClient
from finelog_server import EmbeddedServer
from zephyr.stats import ZephyrStageStat  # the schema Zephyr's coordinator writes


def main() -> None:
    server = EmbeddedServer(log_dir=sys.argv[1], host="127.0.0.1", port=0)
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            rows = json.load(f)
        client = LogClient.connect(("127.0.0.1", server.port))
        table = client.get_table("zephyr.stage", ZephyrStageStat)
        stats = []
        for r in rows:
            fields = {f.name: r.get(f.name) for f in dataclasses.fields(ZephyrStageStat)}
            fields["ts"] = datetime.datetime.fromisoformat(str(r.get("ts", "2026-01-01T00:00:00")).replace("Z", ""))
            stats.append(ZephyrStageStat(**fields))
        table.write(stats)
        result = table.flush(timeout=30)
        client.close()
        print(f"flushed {len(stats)} rows: {result}", file=sys.stderr)
    print(f"ready {server.port}", flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
