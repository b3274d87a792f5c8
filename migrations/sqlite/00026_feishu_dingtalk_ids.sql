-- +goose Up
-- Staff's user ids on Feishu (user_id) and DingTalk (userid), the addresses of the two
-- new platforms.
ALTER TABLE recipients ADD COLUMN feishu_user_id TEXT NOT NULL DEFAULT '';
ALTER TABLE recipients ADD COLUMN dingtalk_userid TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE recipients DROP COLUMN dingtalk_userid;
ALTER TABLE recipients DROP COLUMN feishu_user_id;
