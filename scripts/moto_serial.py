"""moto's server, handling one request at a time.

Real DynamoDB applies each conditional write atomically; moto's default threaded server can
interleave two requests' condition-check and write, letting two "first terminal" writes both win.
Serialising requests restores the atomicity the store contract (and the §7 CAS race test) relies
on. Usage: python moto_serial.py HOST PORT
"""

import os
import sys

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))
app = DomainDispatcherApplication(create_backend_app)
run_simple(host, port, app, threaded=False, request_handler=MotoRequestHandler)
