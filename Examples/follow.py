#!/usr/bin/env python3
"""Follow a live query of the mdq daemon from Python: keeps the matching
paths by item id and prints each change; when the daemon restarts, resumes
from the last clock it was told, so only what changed meanwhile is sent.
Protocol: Documentation/protocol.md.

    python3 Examples/follow.py "kMDItemFSName LIKE '*.pdf'" [SOCKET]
"""
import json
import os
import socket
import stat
import struct
import sys
import time


def state_folder():
    if os.environ.get("MDQ_STATE_DIR"):
        return os.environ["MDQ_STATE_DIR"]
    if os.environ.get("XDG_STATE_HOME"):
        return os.path.join(os.environ["XDG_STATE_HOME"], "mdq")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "mdq")


def default_socket():
    """The daemon's socket, found as mdq finds it (Documentation/daemon.md)."""
    if os.environ.get("MDQ_RUNTIME_DIR"):
        return os.path.join(os.environ["MDQ_RUNTIME_DIR"], "daemon.sock")
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "mdq", "daemon.sock")
    in_state = os.path.join(state_folder(), "run", "daemon.sock")
    if len(os.fsencode(in_state)) <= 107:
        return in_state
    try:  # a long state folder: the daemon records a short private folder
        with open(os.path.join(state_folder(), "runtime-folder")) as record:
            return os.path.join(record.read().strip(), "daemon.sock")
    except OSError:
        return in_state


def connect_to_own_daemon(path):
    """Connects to this user's daemon, or exits saying why, having sent
    nothing: the socket's folder must be this user's and closed to others,
    the socket this user's (or root's), and the process behind it this
    user's or root's (SO_PEERCRED, the check no swap of files can fool)."""
    uid = os.getuid()
    folder = os.path.dirname(path)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        sys.exit("not using %s: its folder is not a folder (a symlink?)" % path)
    if info.st_uid != uid:
        sys.exit("not using %s: its folder belongs to uid %d" % (path, info.st_uid))
    if info.st_mode & 0o077:
        sys.exit("not using %s: its folder is open to other users (mode %o)" % (path, info.st_mode & 0o777))
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid not in (uid, 0):
        sys.exit("not using %s: not a socket of this user's" % path)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    pid, peer_uid, gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if peer_uid not in (uid, 0):
        connection.close()
        sys.exit("not using %s: the process behind it runs as uid %d" % (path, peer_uid))
    return connection


def follow(connection, predicate, items, since):
    """One subscription: keeps `items` (id -> path) and prints each change;
    returns the clock of the last thing the daemon told."""
    request = {"id": 1, "command": "subscribe", "protocol": 2, "predicate": predicate, "interval": 0.2}
    if since:
        request["since"] = since  # told only what changed after it
    connection.sendall((json.dumps(request) + "\n").encode())
    clock = since
    incoming = {}  # the results of an answer in full, until it ends
    for line in connection.makefile("rb"):
        event = json.loads(line)
        if "error" in event:
            sys.exit("mdq daemon: " + event["error"]["message"])
        kind = event.get("event")
        if kind == "resynchronize":  # fell behind: a fresh copy follows
            incoming = {}
        elif kind == "result":
            incoming[event["item"]["id"]] = event["item"]["path"]
        elif kind == "didFinishGathering":
            if event["fresh"]:  # not resumed: the results replace what was held
                items.clear()
            items.update(incoming)
            incoming = {}
            clock = event["clock"]
            print("%d results%s" % (event["count"], " (may be stale)" if event.get("stale") else ""), flush=True)
        elif kind == "didUpdate":
            for item in event["removed"]:  # ids only; some may be unknown here
                if item["id"] in items:
                    print("-", items.pop(item["id"]), flush=True)
            for item in event["changed"]:
                before = items.get(item["id"])
                if before is not None and before != item["path"]:
                    print("<", before, "\n>", item["path"], flush=True)
                else:
                    print("~", item["path"], flush=True)
                items[item["id"]] = item["path"]
            for item in event["added"]:
                items[item["id"]] = item["path"]
                print("+", item["path"], flush=True)
            clock = event["clock"]
    return clock


def main():
    predicate = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else default_socket()
    items = {}  # id -> path: ids are the daemon's, stable across restarts
    clock = None
    while True:
        try:
            connection = connect_to_own_daemon(path)
        except OSError:
            time.sleep(1)  # the daemon is restarting: resume once it is back
            continue
        # No "scopes": everything the daemon indexes.
        clock = follow(connection, predicate, items, clock)
        connection.close()


if __name__ == "__main__":
    main()
