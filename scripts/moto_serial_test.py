"""Checks moto_serial.py's transaction patch keeps DynamoDB's all-or-nothing outcome.

Run against the moto that scripts/moto.sh started: python moto_serial_test.py [ENDPOINT]. A
cancelled TransactWriteItems must leave every item it touched as it was (a put item absent, an
updated or deleted item unchanged), a duplicate-item transaction must change nothing, and a
committed one must apply every write.
"""

import sys
import uuid

import boto3
from botocore.exceptions import ClientError

endpoint = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:4566"
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
table = f"moto-serial-test-{uuid.uuid4().hex[:8]}"
ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                 AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                       {"AttributeName": "sk", "AttributeType": "S"}],
                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                            {"AttributeName": "sk", "KeyType": "RANGE"}])


def key(pk):
    return {"pk": {"S": pk}, "sk": {"S": "x"}}


def get(pk):
    return ddb.get_item(TableName=table, Key=key(pk), ConsistentRead=True).get("Item")


def expect_cancelled(items, code):
    try:
        ddb.transact_write_items(TransactItems=items)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"expected {code}, got {got}"
        return
    raise AssertionError("the transaction was not cancelled")


try:
    ddb.put_item(TableName=table, Item={**key("a"), "n": {"N": "1"}})
    ddb.put_item(TableName=table, Item={**key("d"), "n": {"N": "7"}})
    before_a, before_d = get("a"), get("d")

    # the failing check comes after a put, an update and a delete that were applied first
    expect_cancelled([
        {"Put": {"TableName": table, "Item": {**key("b"), "n": {"N": "2"}}}},
        {"Update": {"TableName": table, "Key": key("a"), "UpdateExpression": "SET n = :v",
                    "ExpressionAttributeValues": {":v": {"N": "5"}}}},
        {"Delete": {"TableName": table, "Key": key("d")}},
        {"ConditionCheck": {"TableName": table, "Key": key("missing"),
                            "ConditionExpression": "attribute_exists(pk)"}},
    ], "TransactionCanceledException")
    assert get("b") is None, "a cancelled transaction's put stayed"
    assert get("a") == before_a, f"a cancelled transaction's update stayed: {get('a')}"
    assert get("d") == before_d, "a cancelled transaction's delete stayed"

    # the same item twice: refused, nothing written
    expect_cancelled([
        {"Put": {"TableName": table, "Item": {**key("c"), "n": {"N": "3"}}}},
        {"Update": {"TableName": table, "Key": key("c"), "UpdateExpression": "SET n = :v",
                    "ExpressionAttributeValues": {":v": {"N": "4"}}}},
    ], "ValidationException")
    assert get("c") is None, "a refused transaction's put stayed"

    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {**key("b"), "n": {"N": "2"}},
                 "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": table, "Key": key("a"), "UpdateExpression": "SET n = :v",
                    "ConditionExpression": "n = :one",
                    "ExpressionAttributeValues": {":v": {"N": "5"}, ":one": {"N": "1"}}}},
        {"Delete": {"TableName": table, "Key": key("d")}},
    ])
    assert get("b")["n"] == {"N": "2"} and get("a")["n"] == {"N": "5"} and get("d") is None, \
        "a committed transaction's writes are missing"
    print("moto_serial: transactions all-or-nothing: ok")
finally:
    ddb.delete_table(TableName=table)
