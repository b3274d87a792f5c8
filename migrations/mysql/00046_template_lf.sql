-- +goose Up
-- Browsers send a textarea's lines ending in CR LF, and templates saved from the console
-- kept them: a version differed from its twin on every line, and CR went out to the
-- platforms. Saving now turns every line break into LF; this does the same to the
-- templates stored before. A template whose subject, body or HTML holds a CR gets a new
-- version with the normalised text (its actor 'line-feeds' says why), so the versions
-- before it still read as they were sent; the others keep their version.
-- The versions are written first, while the templates still show which ones change.
-- CR is looked for in the bytes: the columns' collation ignores control characters.
INSERT INTO template_versions (template_id, number, actor, msg_type, subject, body, html, variables, fallback, created_at)
  SELECT id, version + 1, 'line-feeds', msg_type,
    REPLACE(REPLACE(subject, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    REPLACE(REPLACE(body, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    REPLACE(REPLACE(html, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    variables, fallback, UTC_TIMESTAMP(6)
  FROM templates
  WHERE INSTR(CAST(subject AS BINARY), X'0D') > 0 OR INSTR(CAST(body AS BINARY), X'0D') > 0 OR INSTR(CAST(html AS BINARY), X'0D') > 0;
UPDATE templates SET
    subject = REPLACE(REPLACE(subject, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    body = REPLACE(REPLACE(body, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    html = REPLACE(REPLACE(html, CONCAT(CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)), CHAR(10 USING utf8mb4)), CHAR(13 USING utf8mb4), CHAR(10 USING utf8mb4)),
    version = version + 1,
    updated_at = UTC_TIMESTAMP(6)
  WHERE INSTR(CAST(subject AS BINARY), X'0D') > 0 OR INSTR(CAST(body AS BINARY), X'0D') > 0 OR INSTR(CAST(html AS BINARY), X'0D') > 0;

-- +goose Down
-- Nothing to undo: the line breaks were the same text, and the versions stay history.
SELECT 1;
