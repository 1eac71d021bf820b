-- dropline store, version 4: one index less on every delivery report.
--
-- delivery_events (bulk_id, message_id) was never read: reports are matched to recipients by
-- the recipients' own indexes, and orphans are found by delivery_events_orphan. Each report
-- paid for the index entry all the same (~1 µs of the ~10 µs a report costs to record).
DROP INDEX delivery_events_message;
