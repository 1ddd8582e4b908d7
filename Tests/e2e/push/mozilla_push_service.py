#!/usr/bin/env python3
"""A push service a real Firefox subscribes to (issue 52): Mozilla's push protocol over WebSocket on one side (what
Firefox's own push client speaks: `dom.push.serverURL`), RFC 8030 over HTTPS on the other (what `duet serve` posts
to, checking each push's VAPID JWT with py_vapid as push_service.py does). Test code, loopback only.

    mozilla_push_service.py DIR

- DIR/ca.pem: the HTTPS side's self-signed certificate (what `duet serve --push-ca-file` trusts).
- DIR/ready.json: {"wsPort", "httpsPort"} once both listen.
- A subscription (`register`) gets the endpoint https://127.0.0.1:HTTPS_PORT/push/<channelID>; a POST there is
  refused 403 without valid VAPID, 410 once the channel is unregistered (or never was), else handed to the browser
  as it came (`notification`, the body base64url, `encoding: aes128gcm`: Firefox decrypts it itself) and answered 201.
- DIR/events.jsonl: one JSON line per thing that happened — hello, register, unregister, push (status, VAPID, TTL,
  Urgency, Topic, bytes, the version sent down), ack (Firefox's code per version: 100 delivered, 101 could not decrypt,
  102 not delivered).
Stops when stdin closes (the test ends) or after 10 minutes. Protocol notes: ../shared/notes/firefox.md.
"""
import json
import os
import socket
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from push_service import b64url, check_vapid, push_headers, ready_then_wait, serve_pushes  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ws_frames  # noqa: E402


class State:
    def __init__(self, directory):
        self.lock = threading.Lock()
        self.channels = {}      # channelID -> the uaid (browser) that registered it
        self.connections = {}   # uaid -> its open WebSocket (Connection), while it is connected
        self.log_path = os.path.join(directory, "events.jsonl")

    def log(self, **record):
        record["at"] = round(time.time(), 3)
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(record) + "\n")


class Connection:
    """One browser's WebSocket: text frames of JSON, pings answered."""

    def __init__(self, sock, state):
        self.sock, self.state = sock, state
        self.send_lock = threading.Lock()
        self.uaid = None

    def handshake(self):
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = self.sock.recv(4096)
            if not chunk:
                return False
            request += chunk
        headers = {}
        for line in request.decode(errors="replace").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.state.log(event="connect", request=request.decode(errors="replace").split("\r\n")[0],
                       protocol=headers.get("sec-websocket-protocol"), extensions=headers.get("sec-websocket-extensions"))
        accept = ws_frames.accept_for(headers.get("sec-websocket-key", ""))
        protocol = "Sec-WebSocket-Protocol: push-notification\r\n" if "push-notification" in headers.get("sec-websocket-protocol", "") else ""
        self.sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Accept: {accept}\r\n{protocol}\r\n").encode())
        return True

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def receive(self):
        """The next text message (None when the browser closed)."""
        while True:
            opcode, payload = ws_frames.read_frame(self._read)
            if opcode == ws_frames.CLOSE:
                return None
            if opcode == ws_frames.PING:
                self._send(ws_frames.PONG, payload)
            elif opcode == ws_frames.TEXT:
                return payload.decode()

    def _send(self, opcode, payload):
        with self.send_lock:
            self.sock.sendall(ws_frames.frame(opcode, payload, masked=False))

    def send(self, message):
        self._send(ws_frames.TEXT, json.dumps(message).encode())

    def serve(self, https_port):
        try:
            if not self.handshake():
                return
            while (text := self.receive()) is not None:
                message = json.loads(text)
                kind = message.get("messageType")
                if not kind:  # "{}": the client's ping
                    self._send(ws_frames.TEXT, b"{}")
                elif kind == "hello":
                    self.uaid = message.get("uaid") or uuid.uuid4().hex
                    with self.state.lock:
                        self.state.connections[self.uaid] = self
                    self.send({"messageType": "hello", "uaid": self.uaid, "status": 200, "use_webpush": True})
                    self.state.log(event="hello", uaid=self.uaid, known=bool(message.get("uaid")))
                elif kind == "register":
                    channel = message["channelID"]
                    with self.state.lock:
                        self.state.channels[channel] = self.uaid
                    endpoint = f"https://127.0.0.1:{https_port}/push/{channel}"
                    self.send({"messageType": "register", "channelID": channel, "status": 200, "pushEndpoint": endpoint})
                    self.state.log(event="register", channelID=channel, endpoint=endpoint, key=bool(message.get("key")))
                elif kind == "unregister":
                    channel = message["channelID"]
                    with self.state.lock:
                        self.state.channels.pop(channel, None)
                    self.send({"messageType": "unregister", "channelID": channel, "status": 200})
                    self.state.log(event="unregister", channelID=channel)
                elif kind == "ack":
                    for update in message.get("updates", []):
                        self.state.log(event="ack", channelID=update.get("channelID"), version=update.get("version"),
                                       code=update.get("code"))
                elif kind == "nack":
                    self.state.log(event="nack", version=message.get("version"), code=message.get("code"))
        except (EOFError, ConnectionError, OSError, ValueError) as error:
            self.state.log(event="closed", uaid=self.uaid, why=repr(error))
        finally:
            # Its channels stay subscribed: a browser that comes back says hello with its uaid and gets them again.
            with self.state.lock:
                if self.state.connections.get(self.uaid) is self:
                    del self.state.connections[self.uaid]
            self.sock.close()


def main():
    directory = sys.argv[1]
    state = State(directory)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def handle(path, headers, body, port):
        """A push from the server: VAPID checked, then handed down to the browser that registered the channel."""
        channel = path.rsplit("/", 1)[-1]
        ok, why, claims = check_vapid(headers.get("Authorization"), port)
        with state.lock:
            known = channel in state.channels
            connection = state.connections.get(state.channels.get(channel))
        version = uuid.uuid4().hex
        status = 403 if not ok else 410 if not known else 201
        record = {"event": "push", "channelID": channel, "status": status, "vapid": ok, "vapidProblem": why,
                  "claims": claims, **push_headers(headers), "bytes": len(body)}
        if status == 201:
            record["version"] = version
            if connection is None:
                record["held"] = True  # the browser is away: not kept here (a real service would store it)
            else:
                connection.send({"messageType": "notification", "channelID": channel, "version": version,
                                 "data": b64url(body), "headers": {"encoding": "aes128gcm"}})
        state.log(**record)
        return status, ({"Location": f"/message/{version}"} if status == 201 else {})

    https_port = serve_pushes(directory, handle)

    def accept():
        while True:
            sock, _ = listener.accept()
            threading.Thread(target=Connection(sock, state).serve, args=(https_port,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    ready_then_wait(directory, {"wsPort": listener.getsockname()[1], "httpsPort": https_port})


if __name__ == "__main__":
    main()
