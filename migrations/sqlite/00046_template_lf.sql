-- +goose Up
-- Browsers send a textarea's lines ending in CR LF, and templates saved from the console
-- kept them: a version differed from its twin on every line, and CR went out to the
-- platforms. Saving now turns every line break into LF; this does the same to the
-- templates stored before. A template whose subject, body or HTML holds a CR gets a new
-- version with the normalised text (its actor 'line-feeds' says why), so the versions
-- before it still read as they were sent; the others keep their version.
-- The versions are written first, while the templates still show which ones change.
INSERT INTO template_versions (template_id, number, actor, msg_type, subject, body, html, variables, fallback, created_at)
  SELECT id, version + 1, 'line-feeds', msg_type,
    REPLACE(REPLACE(subject, char(13) || char(10), char(10)), char(13), char(10)),
    REPLACE(REPLACE(body, char(13) || char(10), char(10)), char(13), char(10)),
    REPLACE(REPLACE(html, char(13) || char(10), char(10)), char(13), char(10)),
    variables, fallback, strftime('%Y-%m-%d %H:%M:%f', 'now')
  FROM templates
  WHERE instr(subject, char(13)) > 0 OR instr(body, char(13)) > 0 OR instr(html, char(13)) > 0;
UPDATE templates SET
    subject = REPLACE(REPLACE(subject, char(13) || char(10), char(10)), char(13), char(10)),
    body = REPLACE(REPLACE(body, char(13) || char(10), char(10)), char(13), char(10)),
    html = REPLACE(REPLACE(html, char(13) || char(10), char(10)), char(13), char(10)),
    version = version + 1,
    updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
  WHERE instr(subject, char(13)) > 0 OR instr(body, char(13)) > 0 OR instr(html, char(13)) > 0;

-- +goose Down
-- Nothing to undo: the line breaks were the same text, and the versions stay history.
SELECT 1;
