"""moto's server, handling one request at a time, with transactions that scale like DynamoDB's.

Real DynamoDB applies each conditional write atomically; moto's default threaded server can
interleave two requests' condition-check and write, letting two "first terminal" writes both win.
Serialising requests restores the atomicity the store contract (and the §7 CAS race test) relies
on.

moto 5.2's TransactWriteItems backs up by deep-copying the whole table once per item in the
transaction, so each transaction costs time proportional to the table's size: with the audit
ledger on, most Hub writes are transactions, and a long run (aws-local conformance) slowed until
short protocol windows (a 5 s session retention) lapsed between two of its requests. DynamoDB's
transactions do not slow as a table grows. So this server snapshots only the items a transaction
touches and restores those on cancellation — the same all-or-nothing outcome, at a cost
proportional to the transaction. Usage: python moto_serial.py HOST PORT
"""

import copy
import os
import sys
import types

from werkzeug.serving import run_simple

import moto.dynamodb.models as ddb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


def _deepcopy_except_tables(value, memo=None):
    # The original's whole-table backup becomes the live table (its "restore" a no-op); the
    # touched items are snapshotted and restored by _transact_write_items below.
    return value if isinstance(value, Table) else copy.deepcopy(value, memo)


ddb_models.copy = types.SimpleNamespace(deepcopy=_deepcopy_except_tables, copy=copy.copy)
_original_transact_write_items = DynamoDBBackend.transact_write_items


def _item_key(table, op):
    attrs = op["Item"] if "Item" in op else op["Key"]
    hash_key = DynamoType(attrs[table.hash_key_attr])
    range_key = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_key, range_key


def _transact_write_items(self, transact_items):
    snapshots = []
    for entry in transact_items:
        op = next(iter(entry.values()), None)
        table = self.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        if table is None:
            continue
        try:
            hash_key, range_key = _item_key(table, op)
        except (KeyError, TypeError):
            continue  # malformed: the original refuses it before writing anything
        current = table.get_item(hash_key, range_key)
        snapshots.append((table, hash_key, range_key, copy.deepcopy(current)))
    try:
        _original_transact_write_items(self, transact_items)
    except Exception:
        # reverse order: an item named twice ends at its first (pre-transaction) snapshot
        for table, hash_key, range_key, before in reversed(snapshots):
            if before is None:
                table.delete_item(hash_key, range_key)
            elif range_key is not None:
                table.items[hash_key][range_key] = before
            else:
                table.items[hash_key] = before
        raise


DynamoDBBackend.transact_write_items = _transact_write_items

host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))
app = DomainDispatcherApplication(create_backend_app)
run_simple(host, port, app, threaded=False, request_handler=MotoRequestHandler)
