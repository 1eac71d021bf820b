-- Each look for answers owed first fails the answers left `sending` by a process that died
-- (Store.abandonAnswers, docs/opt-outs.md "Answers"): found by this index, not a scan.
CREATE INDEX reply_answers_sending ON reply_answers (updated_at) WHERE state = 'sending';
