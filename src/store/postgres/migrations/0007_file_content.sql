-- files.content (issue 15): what a file of a channel without per-recipient texts sends, for
-- whichever worker sends it: an email file's template or subject and html, a WhatsApp file's
-- template and sending number; JSON tagged with its channel, NULL for sms. It was
-- files.email (0006), whose rows are email content.
ALTER TABLE files RENAME COLUMN email TO content;
UPDATE files SET content = content || '{"channel": "email"}'::jsonb WHERE content IS NOT NULL;
