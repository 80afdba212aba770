#!/usr/bin/env bash
# Create the Hub's table (from the shared definition in infra/dynamodb-table.json) and its push
# queue + dead-letter queue, exactly as the SAM template and the moto-backed tests do.
set -euo pipefail
TABLE="${MA2H_TABLE:-ma2h}"

awslocal dynamodb create-table --cli-input-json file:///etc/ma2h/dynamodb-table.json --table-name "$TABLE" >/dev/null
awslocal dynamodb update-time-to-live --table-name "$TABLE" \
  --time-to-live-specification "Enabled=true,AttributeName=ttl" >/dev/null

DLQ_URL=$(awslocal sqs create-queue --queue-name ma2h-push-dlq --query QueueUrl --output text)
DLQ_ARN=$(awslocal sqs get-queue-attributes --queue-url "$DLQ_URL" --attribute-names QueueArn --query Attributes.QueueArn --output text)
awslocal sqs create-queue --queue-name ma2h-push \
  --attributes "{\"VisibilityTimeout\":\"180\",\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$DLQ_ARN\\\",\\\"maxReceiveCount\\\":\\\"12\\\"}\"}" >/dev/null
echo "ma2h: table $TABLE and queues ma2h-push (+ dlq) ready"
