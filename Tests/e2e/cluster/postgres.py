#!/usr/bin/env python3
"""A throwaway PostgreSQL 15 for the tests: the one launcher of the project.

    python3 Tests/e2e/cluster/postgres.py start --dir DIR   # prints postgres://duet@127.0.0.1:PORT/duet, leaves it running
    python3 Tests/e2e/cluster/postgres.py stop --dir DIR    # stops it; safe to call twice

With `start --owner-pid PID` a small watchdog stops the server when process PID ends (a test process that crashed
must not leave servers behind).

Debian's binaries (/usr/lib/postgresql/15/bin, package `postgresql`) with a cluster of its own in DIR/data: trust
auth, listening on 127.0.0.1 only, its unix socket in DIR/run. PostgreSQL refuses to run as root, so as root it runs
as the user `duetpg` (created if missing; `nobody` if it cannot be). `start` on a DIR that was started before keeps
its data and its port (DIR/port), so a test can stop the server and bring the same database back at the same URL.
fsync is off: these databases are for tests, and a clean stop (-m fast) still writes everything.
"""

import argparse
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import phase_timing  # noqa: E402  (Tests/e2e/phase_timing.py)

BIN = "/usr/lib/postgresql/15/bin"
DATABASE = "duet"
SUPERUSER = "duet"
WAIT_SECONDS = 30


def fail(message):
    print(f"postgres.py: {message}", file=sys.stderr)
    sys.exit(1)


def service_user():
    """The unprivileged user the server runs as (None: we are not root, run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("duetpg")
        return "duetpg"
    except KeyError:
        pass
    created = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "duetpg"],
        capture_output=True, text=True)
    if created.returncode == 0 or user_exists("duetpg"):  # another launcher may have created it meanwhile
        return "duetpg"
    return "nobody"


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def as_user(user, arguments, **kwargs):
    command = arguments if user is None else ["runuser", "-u", user, "--"] + arguments
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def give(path, user):
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    """True once the server answers (pg_isready: accepting connections)."""
    result = subprocess.run([f"{BIN}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, "-d", "postgres"],
                            capture_output=True)
    return result.returncode == 0


def paths(directory):
    directory = os.path.abspath(directory)
    return directory, os.path.join(directory, "data"), os.path.join(directory, "run"), os.path.join(directory, "postgres.log")


def start(directory, owner_pid=None):
    with phase_timing.spent("PostgreSQL start"):
        return _start(directory, owner_pid)


def _start(directory, owner_pid=None):
    if not os.path.exists(f"{BIN}/postgres"):
        fail(f"{BIN}/postgres not found: apt-get install -y postgresql")
    directory, data, run, log = paths(directory)
    user = service_user()
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o755)
    if user is not None:
        # The server's user must reach DIR: every parent must be searchable by others.
        parent = directory
        while parent != "/":
            if not os.stat(parent).st_mode & 0o001:
                fail(f"{parent} is not searchable by {user}; put DIR under /tmp")
            parent = os.path.dirname(parent)
    for path in (run,):
        os.makedirs(path, exist_ok=True)
        give(path, user)

    port_file = os.path.join(directory, "port")
    if not os.path.exists(os.path.join(data, "PG_VERSION")):
        if os.path.exists(data):
            shutil.rmtree(data)
        os.makedirs(data, mode=0o700)
        give(data, user)
        result = as_user(user, [f"{BIN}/initdb", "-D", data, "-U", SUPERUSER, "--auth=trust", "--no-sync",
                                "-E", "UTF8", "--locale=C"])
        if result.returncode != 0:
            fail(f"initdb failed:\n{result.stdout}{result.stderr}")
        with open(os.path.join(data, "postgresql.conf"), "a") as conf:
            conf.write("\n# postgres.py: a test server\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                       "max_connections = 200\nlog_min_messages = warning\n")

    saved = int(open(port_file).read().strip()) if os.path.exists(port_file) else None
    port, failure = None, ""
    for _ in range(1 if saved is not None else 3):  # a fresh port may be taken between free_port() and the bind
        chosen = saved if saved is not None else free_port()
        if running_pid(data) is not None and accepts(chosen):
            port = chosen  # already running: start is idempotent
            break
        open(log, "a").close()
        give(log, user)
        result = as_user(user, [f"{BIN}/pg_ctl", "-D", data, "-l", log, "-o", f"-p {chosen} -k {run} -h 127.0.0.1",
                                "-w", "-t", str(WAIT_SECONDS), "start"], stdin=subprocess.DEVNULL)
        if result.returncode == 0 and wait_until_accepting(chosen):
            port = chosen
            break
        failure = f"postgres did not start on port {chosen}:\n{result.stdout}{result.stderr}\n{tail(log)}"
        as_user(user, [f"{BIN}/pg_ctl", "-D", data, "-m", "immediate", "stop"])  # whatever half started
    if port is None:
        fail(failure)

    with open(port_file, "w") as f:
        f.write(f"{port}\n")
    pid = running_pid(data)
    if pid is not None:
        with open(os.path.join(directory, "postgres.pid"), "w") as f:
            f.write(f"{pid}\n")

    exists = subprocess.run([f"{BIN}/psql", "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, "-d", "postgres", "-tAc",
                             f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"], capture_output=True, text=True)
    if exists.returncode != 0:
        fail(f"psql failed: {exists.stderr}")
    if exists.stdout.strip() != "1":
        created = subprocess.run([f"{BIN}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, DATABASE],
                                 capture_output=True, text=True)
        if created.returncode != 0:
            fail(f"createdb failed: {created.stderr}")
    if owner_pid is not None:
        watch(directory, owner_pid)
    print(f"postgres://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}", flush=True)


def watch(directory, owner_pid):
    """Starts a detached watchdog that stops the server once `owner_pid` is gone (it ends by itself once the server
    is). Its own process, with no descriptor of ours: a caller that waits for EOF on a pipe (or, as Foundation's
    Process, on a socket) it gave us must see it when we exit, not when the watchdog does."""
    subprocess.Popen([sys.executable, os.path.abspath(__file__), "watch", "--dir", directory, "--owner-pid", str(owner_pid)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     close_fds=True, start_new_session=True)


def watchdog(directory, owner_pid):
    _, data, _, _ = paths(directory)
    while True:
        time.sleep(0.5)
        if running_pid(data) is None:
            return
        try:
            os.kill(owner_pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
    stop(directory)


def wait_until_accepting(port):
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if accepts(port):
            return True
        time.sleep(0.1)
    return False


def running_pid(data):
    """The postmaster's pid if its pid file names a live process."""
    try:
        pid = int(open(os.path.join(data, "postmaster.pid")).readline().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
        return pid
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid


def tail(path, lines=30):
    try:
        return "".join(open(path).readlines()[-lines:])
    except OSError:
        return ""


def stop(directory):
    directory, data, _, _ = paths(directory)
    pid = running_pid(data)
    if pid is None:
        return  # never started, or stopped already
    owner = pwd.getpwuid(os.stat(data).st_uid).pw_name if os.geteuid() == 0 else None
    result = as_user(owner, [f"{BIN}/pg_ctl", "-D", data, "-m", "fast", "-w", "-t", str(WAIT_SECONDS), "stop"])
    if result.returncode != 0 and running_pid(data) is not None:
        os.kill(pid, 9)  # a server that does not stop in 30 s is killed
        deadline = time.monotonic() + 5
        while running_pid(data) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    pid_file = os.path.join(directory, "postgres.pid")
    if os.path.exists(pid_file):
        os.remove(pid_file)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["start", "stop", "watch"])
    parser.add_argument("--dir", required=True, help="the server's directory (data, socket, log, port, pid)")
    parser.add_argument("--owner-pid", type=int, help="start, watch: stop the server when this process ends")
    arguments = parser.parse_args()
    if arguments.command == "start":
        start(arguments.dir, arguments.owner_pid)
    elif arguments.command == "watch":
        watchdog(arguments.dir, arguments.owner_pid)
    else:
        stop(arguments.dir)


if __name__ == "__main__":
    main()
