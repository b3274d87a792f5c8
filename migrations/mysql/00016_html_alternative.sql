-- +goose Up
-- An HTML alternative of a template's body, sent by email beside the text; and the HTML
-- rendered for an email message ('' for none).
ALTER TABLE templates ADD COLUMN html MEDIUMTEXT NOT NULL DEFAULT ('');
ALTER TABLE messages ADD COLUMN content_html MEDIUMTEXT NOT NULL DEFAULT ('');

-- +goose Down
ALTER TABLE messages DROP COLUMN content_html;
ALTER TABLE templates DROP COLUMN html;
