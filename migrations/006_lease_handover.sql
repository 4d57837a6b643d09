-- Lease hand-over. A lease is acknowledged once its holder shows it has it (a
-- progress report or a heartbeat renewing it). Until then the lease may not have reached its
-- agent: a new poll from the same slot is handed the same lease again (same lease id, same
-- attempt) instead of burning an attempt, and a grant whose response could not be delivered
-- is withdrawn (the job goes back to the queue at the attempt it had). lease_request_id is the
-- agent-chosen id of the poll that was granted the lease: a retry of that poll gets the lease
-- back even after it was acknowledged.
-- Leases live at upgrade time were granted under the old rules: they count as acknowledged.
ALTER TABLE jobs ADD COLUMN lease_acked INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN lease_request_id TEXT;
