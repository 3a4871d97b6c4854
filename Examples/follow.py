#!/usr/bin/env python3
"""Follow a live query of the mdq daemon from Python: keeps the matching
paths by item id and prints each change. Protocol: README, "The daemon
protocol".

    python3 Examples/follow.py "kMDItemFSName LIKE '*.pdf'" [SOCKET]
"""
import json
import os
import socket
import sys


def default_socket():
    if os.environ.get("MDQ_RUNTIME_DIR"):
        return os.path.join(os.environ["MDQ_RUNTIME_DIR"], "daemon.sock")
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "mdq", "daemon.sock")
    return "/tmp/mdq-%d/daemon.sock" % os.getuid()


def main():
    predicate = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else default_socket()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    # No "scopes": everything the daemon indexes.
    request = {"id": 1, "command": "subscribe", "predicate": predicate, "interval": 0.2}
    connection.sendall((json.dumps(request) + "\n").encode())
    items = {}  # id -> path
    for line in connection.makefile("rb"):
        event = json.loads(line)
        if "error" in event:
            sys.exit("mdq daemon: " + event["error"]["message"])
        kind = event.get("event")
        if kind == "resynchronize":  # fell behind: a fresh copy follows
            items.clear()
        elif kind == "result":
            items[event["item"]["id"]] = event["item"]["path"]
        elif kind == "didFinishGathering":
            print("%d results%s" % (event["count"], " (may be stale)" if event.get("stale") else ""), flush=True)
        elif kind == "didUpdate":
            for item in event["removed"]:
                print("-", items.pop(item["id"], item["path"]), flush=True)
            for item in event["changed"]:
                if "previousPath" in item:
                    print("<", item["previousPath"], "\n>", item["path"], flush=True)
                else:
                    print("~", item["path"], flush=True)
                items[item["id"]] = item["path"]
            for item in event["added"]:
                items[item["id"]] = item["path"]
                print("+", item["path"], flush=True)


if __name__ == "__main__":
    main()
