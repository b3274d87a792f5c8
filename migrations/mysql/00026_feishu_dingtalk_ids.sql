-- +goose Up
-- Staff's user ids on Feishu (user_id) and DingTalk (userid), the addresses of the two
-- new platforms.
ALTER TABLE recipients ADD COLUMN feishu_user_id VARCHAR(128) NOT NULL DEFAULT '',
  ADD COLUMN dingtalk_userid VARCHAR(128) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE recipients DROP COLUMN feishu_user_id, DROP COLUMN dingtalk_userid;
