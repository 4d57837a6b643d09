-- Who may enrol under a name already enrolled (coordinator config reenrolment: token).
-- An operator's approval for the next enrolment under an agent's name by a client that cannot
-- show the agent's current token (`benchfleet agents approve NAME`); cleared by that enrolment.
ALTER TABLE agents ADD COLUMN reenrol_approved_at INTEGER;
-- The salted SHA-256 of the key an agent keeps in its state directory and shows on every
-- enrolment (X-Agent-Key): the same agent enrols again under its name with it, even when an
-- enrolment's answer (its token) was lost on the way.
ALTER TABLE agents ADD COLUMN key_salt BLOB;
ALTER TABLE agents ADD COLUMN key_hash BLOB;
