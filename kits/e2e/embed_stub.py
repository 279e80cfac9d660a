"""A deterministic embedding server for iai-mcp's `http` embed provider.

Usage: embed_stub.py MODEL_ID DIM

Listens on 127.0.0.1 on a free port and prints `PORT <n>` on its first
stdout line. POST /embed with {"texts": [...], "input_type": ...} answers
{"model": MODEL_ID, "dimensions": DIM, "vectors": [...]}: each vector is a
normalised bag of hashed lowercase words, so equal texts embed equally and
texts sharing words are close, which is all the end-to-end kit needs (the
real model's weights cannot be downloaded here). Stops on SIGTERM.
"""

import hashlib
import json
import math
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = sys.argv[1]
DIM = int(sys.argv[2])


def vector(text):
    out = [0.0] * DIM
    for word in re.findall(r"\w+", text.lower()) or [text]:
        digest = hashlib.blake2b(word.encode(), digest_size=16).digest()
        for k in range(3):
            slot = int.from_bytes(digest[4 * k:4 * k + 4], "big") % DIM
            out[slot] += 1.0 if digest[12 + k] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    if not any(out):
        out[0], norm = 1.0, 1.0
    return [x / norm for x in out]


class Embed(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        if self.path != "/embed":
            return self.reply(404, {"error": "not found"})
        try:
            length = int(self.headers.get("Content-Length") or 0)
            texts = json.loads(self.rfile.read(length))["texts"]
            if isinstance(texts, str):
                texts = [texts]
        except (ValueError, KeyError, TypeError) as e:
            return self.reply(400, {"error": str(e)})
        self.reply(200, {"model": MODEL, "dimensions": DIM,
                         "vectors": [vector(str(t)) for t in texts]})


server = ThreadingHTTPServer(("127.0.0.1", 0), Embed)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
