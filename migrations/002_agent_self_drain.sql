-- An agent's own drain (SIGTERM, told through heartbeats) is kept apart from an operator's
-- (POST /agents/{id}/drain): a restarted agent clears its own without undoing the operator's.
ALTER TABLE agents ADD COLUMN self_draining INTEGER NOT NULL DEFAULT 0;
