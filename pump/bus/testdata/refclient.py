"""A client of the main bus written as the Python reference's clients are
(agentserver/console/client.py over agentserver/server/app.py): JSON bodies
to /auth/login, /auth/me, /auth/logout, /health, and the /ws JSON protocol
with the bearer token in the Authorization header. Standard library only
(http.client, ssl, a minimal RFC 6455 client), so it runs where aiohttp is
not installed. Differences from the reference client, which the bus
requires: https/wss, and a "totp" field in the login body.

Usage: python3 refclient.py HOST PORT USER PASSWORD TOTP
It prints one JSON object: every answer, keyed by a step name, as
[status, body] for HTTP and the reply frame for /ws. TestReferenceClient
(python_compat_test.go) runs it and checks each answer against what the
reference gives (python-reference.md §6.3, §7.1).
"""
import base64
import http.client
import json
import os
import socket
import ssl
import struct
import sys


def tls():
    c = ssl.create_default_context()
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE  # the test pins nothing; the bus's cert is self-signed
    return c


def http_req(host, port, method, path, body=None, token=None, raw=None):
    conn = http.client.HTTPSConnection(host, port, context=tls(), timeout=60)
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    b = r.read()
    conn.close()
    try:
        return [r.status, json.loads(b)]
    except ValueError:
        return [r.status, b.decode(errors="replace")]


class WS:
    """A minimal RFC 6455 client: text frames, masked, no extensions."""

    def __init__(self, host, port, path, token):
        self.s = tls().wrap_socket(socket.create_connection((host, port), timeout=60), server_hostname=host)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n"
               % (path, host, port, key, token))
        self.s.sendall(req.encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise EOFError("closed during the handshake")
            buf += chunk
        head, _, self.buf = buf.partition(b"\r\n\r\n")
        self.status = int(head.split(b" ")[1])

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, data, opcode=1):
        if not isinstance(data, bytes):
            data = json.dumps(data).encode()
        n = len(data)
        hdr = bytes([0x80 | opcode])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def receive_json(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if op == 9:  # ping
                self.send(payload, opcode=10)
                continue
            if op == 10:
                continue
            if op == 8:
                raise EOFError("closed: %r" % payload)
            msg += payload
            if b0 & 0x80:
                return json.loads(msg)

    def close(self):
        try:
            self.send(struct.pack(">H", 1000), opcode=8)
        finally:
            self.s.close()


def main():
    host, port, user, password, code = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    out = {}
    out["health"] = http_req(host, port, "GET", "/health")
    out["login_bad_json"] = http_req(host, port, "POST", "/auth/login", raw=b"{not json")
    out["login_empty"] = http_req(host, port, "POST", "/auth/login", body={"username": "", "password": ""})
    out["login_reference_body"] = http_req(host, port, "POST", "/auth/login",
                                           body={"username": user, "password": password})
    out["login_wrong_password"] = http_req(host, port, "POST", "/auth/login",
                                           body={"username": user, "password": password + "x", "totp": code})
    login = http_req(host, port, "POST", "/auth/login", body={"username": user, "password": password, "totp": code})
    token = login[1].get("token", "") if isinstance(login[1], dict) else ""
    out["login"] = [login[0], sorted(login[1].keys()) if isinstance(login[1], dict) else login[1]]
    out["token_is_64_hex"] = len(token) == 64 and all(c in "0123456789abcdef" for c in token)
    out["me_no_header"] = http_req(host, port, "GET", "/auth/me")
    out["me_bad_token"] = http_req(host, port, "GET", "/auth/me", token="0" * 64)
    me = http_req(host, port, "GET", "/auth/me", token=token)
    out["me"] = [me[0], me[1].get("username"), me[1].get("role")]
    out["get_login"] = http_req(host, port, "GET", "/auth/login")
    out["unknown_path_no_token"] = http_req(host, port, "GET", "/nowhere")

    ws = WS(host, port, "/ws", token)
    out["ws_status"] = ws.status
    out["connected"] = ws.receive_json()

    def command(name, cmd):
        # client.py's send_command: send, then the next frame is the answer.
        ws.send(cmd)
        out[name] = ws.receive_json()

    command("ping", {"type": "ping"})
    command("listeners", {"type": "listeners"})
    command("targets", {"type": "targets"})
    command("unknown_type", {"type": "dance"})
    command("no_type", {})
    command("send_no_target", {"type": "send", "content": "Dan"})
    command("send_no_content", {"type": "send", "target": "greeter"})
    command("send_empty", {"type": "send", "raw": "   "})
    command("send_no_at", {"type": "send", "raw": "greeter Dan"})
    command("send_at_only", {"type": "send", "raw": "@greeter"})
    command("send_unknown_target", {"type": "send", "raw": "@nobody hi"})
    command("send_raw", {"type": "send", "raw": "@greeter Dan"})
    # The bus then streams the conversation's events on the socket (the
    # reference never pushed any); a client reads on to its completion.
    events = []
    while True:
        e = ws.receive_json()
        events.append(e.get("type"))
        if e.get("type") == "complete" or len(events) > 50:
            break
    out["send_raw_events"] = events
    command("send_target", {"type": "send", "target": "greeter", "content": "Ann"})
    ws.close()
    out["logout"] = http_req(host, port, "POST", "/auth/logout", token=token)
    out["me_after_logout"] = http_req(host, port, "GET", "/auth/me", token=token)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
