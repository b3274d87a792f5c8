-- +goose Up
-- A template for SMS and voice names the provider's approved template (its code) and
-- maps the provider template's parameters to Herald expressions, in order, as a JSON list
-- of "name=expression"; versions keep both. A message keeps the code and the rendered
-- parameters as JSON ('' for none).
ALTER TABLE templates ADD COLUMN provider_template VARCHAR(64) NOT NULL DEFAULT '', ADD COLUMN provider_params VARCHAR(2000) NOT NULL DEFAULT '[]';
ALTER TABLE template_versions ADD COLUMN provider_template VARCHAR(64) NOT NULL DEFAULT '', ADD COLUMN provider_params VARCHAR(2000) NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN provider_template TEXT NOT NULL DEFAULT ('');

-- +goose Down
ALTER TABLE messages DROP COLUMN provider_template;
ALTER TABLE template_versions DROP COLUMN provider_template, DROP COLUMN provider_params;
ALTER TABLE templates DROP COLUMN provider_template, DROP COLUMN provider_params;
