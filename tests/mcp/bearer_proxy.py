"""A forwarding proxy that adds dshq's bearer token, for clients that cannot send one
(the MCP conformance suite's server runner takes only a URL).

Usage: bearer_proxy.py UPSTREAM_BASE TOKEN
Listens on 127.0.0.1 at a free port, prints "listening PORT" on stdout, and forwards
every request to UPSTREAM_BASE with `Authorization: Bearer TOKEN` added. Responses are
relayed as they arrive (Server-Sent Events streams included).
"""

import http.client
import http.server
import socketserver
import sys
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
TOKEN = sys.argv[2]
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization"}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the test reads stdout
        pass

    def forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        # The client's own Host goes through unchanged, so the server's Host and Origin
        # checks (DNS-rebinding protection) judge what the client sent.
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        headers["Authorization"] = f"Bearer {TOKEN}"
        conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=120)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            conn.close()
        self.close_connection = True

    do_GET = do_POST = do_DELETE = forward


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Proxy)
    print(f"listening {srv.server_address[1]}", flush=True)
    srv.serve_forever()
