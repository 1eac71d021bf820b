-- files.detail (issue 32): what a sending file waits on, as a code and its parameters (JSON:
-- {"code":"SERVICE_UNREACHABLE","since":…,"error":…}), NULL when nothing. The dashboard words
-- it in its language; status prints it.
ALTER TABLE files ADD COLUMN detail TEXT;
